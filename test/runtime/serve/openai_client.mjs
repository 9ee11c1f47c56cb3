// openai_client.mjs - drives a strata server with the official `openai` npm
// client (openai-node) and prints what it sees, for FileCheck.
//
// The server is started by this script (--server PATH, a binary that prints
// "listening on port N" and serves until its stdin closes): today the
// test-only strata-serve-test-server (echo engine, byte-level tokenizer); the
// same script runs against strata-serve once an engine exists (--url URL
// instead of --server, the echo-specific lines then differ).
//
// Usage:
//   node openai_client.mjs --npm <dir with node_modules/openai> --server <binary>

import { spawn } from 'node:child_process';
import path from 'node:path';
import { createRequire } from 'node:module';
import readline from 'node:readline';

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith('--') ? [...acc, [a.slice(2), all[i + 1]]] : acc), []));
if (!args.npm || (!args.server && !args.url)) {
  console.error('usage: node openai_client.mjs --npm DIR (--server BINARY | --url URL)');
  process.exit(2);
}
const require = createRequire(path.join(path.resolve(args.npm), 'package.json'));
const OpenAI = require('openai');

async function startServer(binary, serverArgs = []) {
  const child = spawn(binary, serverArgs, { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = readline.createInterface({ input: child.stdout });
  const port = await new Promise((resolve, reject) => {
    lines.once('line', (line) => {
      const m = /listening on port (\d+)/.exec(line);
      m ? resolve(Number(m[1])) : reject(new Error(`unexpected server output: ${line}`));
    });
    child.once('exit', (code) => reject(new Error(`server exited with ${code}`)));
  });
  return { child, url: `http://127.0.0.1:${port}` };
}

async function metrics(url, name) {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(name + ' '));
  return line ? Number(line.split(' ')[1]) : undefined;
}

async function expectError(label, promise) {
  try {
    await promise;
    console.log(`${label}: no error`);
  } catch (e) {
    // openai-node's APIError: HTTP status plus the server's error object.
    console.log(`${label}: status ${e.status} type ${e.type} param ${e.param} code ${e.code} message ${e.error?.message}`);
  }
}

const server = args.server ? await startServer(args.server) : { child: null, url: args.url };
const client = new OpenAI({ apiKey: 'unused', baseURL: `${server.url}/v1`, maxRetries: 0 });
try {
  const models = await client.models.list();
  const model = models.data[0].id;
  console.log(`models: ${models.data.map((m) => m.id).join(',')}`);

  const c = await client.completions.create({ model, prompt: 'hello', max_tokens: 8, temperature: 0 });
  console.log(`completion: ${JSON.stringify(c.choices[0].text)} finish ${c.choices[0].finish_reason} usage ${JSON.stringify(c.usage)}`);

  const chat = await client.chat.completions.create({
    model, messages: [{ role: 'user', content: 'abcde' }], max_tokens: 30, stop: ['cd'],
  });
  console.log(`chat: ${JSON.stringify(chat.choices[0].message.content)} role ${chat.choices[0].message.role} finish ${chat.choices[0].finish_reason}`);

  const stream = await client.chat.completions.create({
    model, messages: [{ role: 'user', content: 'hey' }], max_tokens: 12, stream: true,
    stream_options: { include_usage: true },
  });
  let text = '';
  let chunks = 0;
  let finish = null;
  let usage = null;
  for await (const chunk of stream) {
    ++chunks;
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices) {
      text += choice.delta.content ?? '';
      finish = choice.finish_reason ?? finish;
    }
  }
  console.log(`chat stream: ${JSON.stringify(text)} finish ${finish} usage ${JSON.stringify(usage)} chunks>1 ${chunks > 1}`);

  const cstream = await client.completions.create({ model, prompt: 'xyz', max_tokens: 7, stream: true });
  let ctext = '';
  for await (const chunk of cstream) ctext += chunk.choices[0]?.text ?? '';
  console.log(`completion stream: ${JSON.stringify(ctext)}`);

  const two = await client.completions.create({ model, prompt: 'nm', n: 2, max_tokens: 3, seed: 7 });
  console.log(`n=2: ${JSON.stringify(two.choices.map((c) => [c.index, c.text]))} usage ${two.usage.completion_tokens}`);
  const lp = await client.chat.completions.create({
    model, messages: [{ role: 'user', content: 'q' }], max_tokens: 2, logprobs: true, top_logprobs: 1,
  });
  console.log(`chat logprobs: ${JSON.stringify(lp.choices[0].logprobs.content.map((t) => [t.token, t.logprob]))}`);
  // GLM reasoning parser: "<think>" and "</think>" are special tokens.
  const think = { model, messages: [{ role: 'user', content: '<think>why</think>so' }], max_tokens: 13 };
  const thought = await client.chat.completions.create(think);
  console.log(`reasoning: ${JSON.stringify(thought.choices[0].message.reasoning_content)} content ${JSON.stringify(thought.choices[0].message.content)}`);
  let sr = '';
  let sc = '';
  for await (const chunk of await client.chat.completions.create({ ...think, stream: true })) {
    for (const choice of chunk.choices) {
      sr += choice.delta.reasoning_content ?? '';
      sc += choice.delta.content ?? '';
    }
  }
  console.log(`reasoning stream: ${JSON.stringify(sr)} content ${JSON.stringify(sc)}`);
  await expectError('n=65', client.completions.create({ model, prompt: 'x', n: 65 }));
  await expectError('other model', client.completions.create({ model: 'gpt-4', prompt: 'x' }));
  await expectError('empty messages', client.chat.completions.create({ model, messages: [] }));

  // Abort a stream mid-way: the server must cancel the request (polled for up
  // to 20 s: a loaded 2-core CI machine is slow to notice the closed socket).
  const controller = new AbortController();
  const long = await client.chat.completions.create(
    { model, messages: [{ role: 'user', content: 'forever' }], max_tokens: 3000, stream: true },
    { signal: controller.signal });
  let seen = 0;
  try {
    for await (const chunk of long) {
      if (++seen === 3) controller.abort();
    }
  } catch (e) {
    // Some versions end the iteration quietly on abort, others throw.
    if (!(e instanceof OpenAI.APIUserAbortError) && !/Abort/.test(e.name)) throw e;
  }
  console.log(`aborted after ${seen} chunks`);
  let cancelled;
  for (let i = 0; i < 400; ++i) {
    cancelled = await metrics(server.url, 'strata_cancelled_requests_total');
    if (cancelled >= 1) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  console.log(`cancelled requests: ${cancelled}`);
  let inFlight;
  for (let i = 0; i < 400; ++i) {
    inFlight = await metrics(server.url, 'strata_requests_in_flight');
    if (inFlight === 0) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  console.log(`in flight: ${inFlight}`);

  if (args.server) {
    // Tools, against a second test server whose echo is the last turn, so
    // the user turn scripts what the "model" writes: turn 1 is a call in
    // GLM's format, turn 2 (after the tool result) repeats the result.
    const toolServer = await startServer(args.server, ['--echo-last-turn', '1']);
    try {
      const tc = new OpenAI({ apiKey: 'unused', baseURL: `${toolServer.url}/v1`, maxRetries: 0 });
      const tools = [{
        type: 'function',
        function: {
          name: 'get_weather', description: 'Weather of a city',
          parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } } },
        },
      }];
      const user = { role: 'user', content: '<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n<arg_key>days</arg_key>\n<arg_value>2</arg_value>\n</tool_call>' };
      // <|assistant|> (id 261 of the test tokenizer) ends the echoed turn.
      const first = await tc.chat.completions.create({ model, messages: [user], tools, stop_token_ids: [261] });
      const call = first.choices[0].message.tool_calls[0];
      console.log(`tool call: ${call.function.name} ${call.function.arguments} type ${call.type} finish ${first.choices[0].finish_reason} content ${first.choices[0].message.content}`);
      const second = await tc.chat.completions.create({
        model, tools, stop_token_ids: [261],
        messages: [user, first.choices[0].message, { role: 'tool', tool_call_id: call.id, content: '22C' }],
      });
      console.log(`after tool: ${JSON.stringify(second.choices[0].message.content)} finish ${second.choices[0].finish_reason}`);
      const calls = [];
      for await (const chunk of await tc.chat.completions.create({ model, messages: [user], tools, stop_token_ids: [261], stream: true })) {
        for (const d of chunk.choices[0]?.delta?.tool_calls ?? []) calls.push(`${d.index}:${d.function.name}:${d.function.arguments}`);
      }
      console.log(`streamed tool calls: ${calls.join(' ')}`);
      const named = await tc.chat.completions.create({
        model, tools, stop_token_ids: [261],
        tool_choice: { type: 'function', function: { name: 'get_weather' } },
        messages: [{ role: 'user', content: '<arg_key>city</arg_key>\n<arg_value>Rome</arg_value>\n</tool_call>' }],
      });
      const n = named.choices[0].message.tool_calls[0].function;
      console.log(`named tool_choice: ${n.name} ${n.arguments} finish ${named.choices[0].finish_reason}`);
      const none = await tc.chat.completions.create({ model, messages: [user], tools, tool_choice: 'none', stop_token_ids: [261] });
      console.log(`tool_choice none: tool_calls ${none.choices[0].message.tool_calls} finish ${none.choices[0].finish_reason}`);
      await expectError('unknown named tool', tc.chat.completions.create({
        model, messages: [user], tools, tool_choice: { type: 'function', function: { name: 'nope' } } }));
    } finally {
      toolServer.child.stdin.end();
    }
  }
} finally {
  if (server.child) server.child.stdin.end();
}
