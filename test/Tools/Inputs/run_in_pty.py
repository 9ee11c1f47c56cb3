"""Runs a command with its stderr on a pseudo-terminal and prints what it
wrote there, with carriage returns shown as <CR> and the erase-line escape
as <EL>, so that FileCheck can see a progress line being rewritten.

usage: run_in_pty.py COMMAND [ARG...]   (exits with the command's status)
"""

import os
import pty
import subprocess
import sys

master, slave = pty.openpty()
process = subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=slave)
os.close(slave)
data = b""
while True:
    try:
        chunk = os.read(master, 4096)
    except OSError:  # EIO once the command closed the terminal
        break
    if not chunk:
        break
    data += chunk
status = process.wait()
text = data.decode("utf-8", "replace")
sys.stdout.write(text.replace("\r\n", "\n").replace("\r", "<CR>").replace("\x1b[K", "<EL>"))
sys.exit(status)
