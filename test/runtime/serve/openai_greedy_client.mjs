// openai_greedy_client.mjs - greedy requests to a running strata-serve through
// the official `openai` npm client (openai-node), printed in a stable form so
// that two servers' answers can be diffed (e.g. a sharded artifact's against
// one rank's) and checked with FileCheck.
//
// Requests, all at temperature 0: the model list; a completion (plain, then
// streamed with usage: the two texts must be equal); a chat completion (plain,
// then streamed with usage). Prints each one's text, finish reason and usage.
//
// Usage:
//   node openai_greedy_client.mjs --npm DIR --url URL --prompt TEXT --max-tokens N

import path from 'node:path';
import { createRequire } from 'node:module';

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith('--') ? [...acc, [a.slice(2), all[i + 1]]] : acc), []));
if (!args.npm || !args.url || !args.prompt || !args['max-tokens']) {
  console.error('usage: node openai_greedy_client.mjs --npm DIR --url URL --prompt TEXT --max-tokens N');
  process.exit(2);
}
const require = createRequire(path.join(path.resolve(args.npm), 'package.json'));
const OpenAI = require('openai');
const maxTokens = Number(args['max-tokens']);

/// Reads a stream of completion or chat chunks into its text, finish reason,
/// usage and chunk count.
async function drain(stream, textOf) {
  let text = '';
  let finish = null;
  let usage = null;
  let chunks = 0;
  for await (const chunk of stream) {
    ++chunks;
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices ?? []) {
      text += textOf(choice) ?? '';
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  return { text, finish, usage, chunks };
}

const client = new OpenAI({ apiKey: 'unused', baseURL: `${args.url}/v1`, maxRetries: 0, timeout: 600_000 });
const models = await client.models.list();
const model = models.data[0].id;
console.log(`models: ${models.data.map((m) => m.id).join(',')}`);

const completion = await client.completions.create({
  model, prompt: args.prompt, max_tokens: maxTokens, temperature: 0,
});
console.log(`completion: ${JSON.stringify(completion.choices[0].text)} finish ${completion.choices[0].finish_reason}` +
            ` usage ${JSON.stringify(completion.usage)}`);
const streamed = await drain(
  await client.completions.create({
    model, prompt: args.prompt, max_tokens: maxTokens, temperature: 0, stream: true,
    stream_options: { include_usage: true },
  }),
  (choice) => choice.text);
console.log(`completion stream: ${JSON.stringify(streamed.text)} finish ${streamed.finish}` +
            ` usage ${JSON.stringify(streamed.usage)} chunks>1 ${streamed.chunks > 1}`);
console.log(`completion stream equal: ${streamed.text === completion.choices[0].text}`);

const messages = [{ role: 'user', content: args.prompt }];
const chat = await client.chat.completions.create({ model, messages, max_tokens: maxTokens, temperature: 0 });
console.log(`chat: ${JSON.stringify(chat.choices[0].message.content)} finish ${chat.choices[0].finish_reason}` +
            ` usage ${JSON.stringify(chat.usage)}`);
const chatStreamed = await drain(
  await client.chat.completions.create({
    model, messages, max_tokens: maxTokens, temperature: 0, stream: true,
    stream_options: { include_usage: true },
  }),
  (choice) => choice.delta?.content);
console.log(`chat stream: ${JSON.stringify(chatStreamed.text)} finish ${chatStreamed.finish}` +
            ` usage ${JSON.stringify(chatStreamed.usage)}`);
console.log(`chat stream equal: ${chatStreamed.text === chat.choices[0].message.content}`);
