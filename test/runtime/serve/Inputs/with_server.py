"""Runs a command against a server binary that prints "listening on port N".

Usage: with_server.py SERVER [SERVER ARGS...] -- COMMAND [ARGS...]
Starts SERVER, waits for its port line, runs COMMAND with every "{port}" in
its arguments replaced while the server's later output goes on to stderr,
closes the server's stdin (strata-serve-test-server then stops;
strata-serve gets SIGTERM after 2 s) and exits with COMMAND's status. For lit tests of clients against strata-serve(-test-server).
"""
import re
import subprocess
import sys
import threading

split = sys.argv.index("--")
server_cmd, command = sys.argv[1:split], sys.argv[split + 1:]
server = subprocess.Popen(server_cmd, stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True)
# Lines before the port line (e.g. strata-serve's weight loading report)
# are passed through to stderr.
match = None
while not match:
    line = server.stdout.readline()
    if not line:
        sys.exit("with_server.py: the server exited before its port line")
    match = re.search(r"listening on port (\d+)", line)
    if not match:
        sys.stderr.write(line)
port = match.group(1)


def forward_output():
    # Keep reading the server's stdout (its per-request log lines) for the
    # whole run: an unread pipe fills after about 64 KiB and then blocks the
    # server's next write, i.e. the whole server.
    for line in server.stdout:
        sys.stderr.write(line)


threading.Thread(target=forward_output, daemon=True).start()
status = subprocess.call([a.replace("{port}", port) for a in command])
server.stdin.close()
try:
    server.wait(timeout=2)
except subprocess.TimeoutExpired:
    server.terminate()
    server.wait(timeout=30)
sys.exit(status)
