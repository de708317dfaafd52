// The official OpenAI Node client against `inferscope-cli serve`: chat, completion, streaming,
// logprobs, structured output, tools and errors. Exits non-zero on the first failed check; prints "N passed, 0 failed".
import OpenAI from 'openai';
import assert from 'node:assert/strict';

const [baseURL, apiKey] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 60000 });
let passed = 0;
async function check(name, fn) {
  await fn();
  passed++;
  console.log(`ok ${name}`);
}

await check('models', async () => {
  const models = await client.models.list();
  assert.equal(models.data[0].id, 'stories260K');
});

await check('chat with logprobs', async () => {
  const r = await client.chat.completions.create({
    model: 'stories260K', messages: [{ role: 'user', content: 'Lily saw a dog.' }],
    temperature: 0, max_tokens: 12, logprobs: true, top_logprobs: 20,
  });
  assert.equal(r.object, 'chat.completion');
  assert.equal(typeof r.choices[0].message.content, 'string');
  assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
  const content = r.choices[0].logprobs.content;
  assert.ok(content.length > 0);
  for (const t of content) {
    assert.equal(t.top_logprobs.length, 20);
    assert.ok(t.logprob <= 0);
    if (!t.token.includes('\uFFFD')) assert.deepEqual(t.bytes, [...Buffer.from(t.token, 'utf8')]);
    // greedy: the chosen token is the most probable
    assert.ok(Math.abs(t.logprob - t.top_logprobs[0].logprob) < 1e-9);
    assert.equal(typeof t.inferscope.survivors['top-k'], 'number');
  }
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
});

await check('completion', async () => {
  const r = await client.completions.create({ model: 'stories260K', prompt: 'Once upon a time', max_tokens: 10, temperature: 0, logprobs: 3 });
  assert.equal(r.object, 'text_completion');
  assert.ok(r.choices[0].text.length > 0);
  assert.equal(r.choices[0].logprobs.tokens.join(''), r.choices[0].text);
  assert.equal(r.usage.completion_tokens, 10);
});

await check('streaming chat equals the whole answer', async () => {
  const params = { model: 'stories260K', messages: [{ role: 'user', content: 'Tom had a ball.' }], temperature: 0.7, seed: 3, max_tokens: 20 };
  const whole = await client.chat.completions.create(params);
  const stream = await client.chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
  let text = '';
  let usage = null;
  let finish = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    const c = chunk.choices[0];
    if (c?.delta?.content) text += c.delta.content;
    if (c?.finish_reason) finish = c.finish_reason;
  }
  assert.equal(text, whole.choices[0].message.content);
  assert.equal(finish, whole.choices[0].finish_reason);
  // The same counts; the second time, every prompt token but the last was already cached.
  assert.equal(usage.prompt_tokens_details.cached_tokens, usage.prompt_tokens - 1);
  const { prompt_tokens_details: a, ...counts } = usage;
  const { prompt_tokens_details: b, ...wholeCounts } = whole.usage;
  assert.deepEqual(counts, wholeCounts);
});

// echo with logprobs on completions, as lm-evaluation-harness asks for a log-likelihood: the
// prompt's tokens first, the first one's logprob null.
await check('echo with logprobs', async () => {
  const prompt = 'Once upon a time';
  const r = await client.completions.create({ model: 'stories260K', prompt, max_tokens: 1, temperature: 0, logprobs: 1, echo: true });
  assert.ok(r.choices[0].text.startsWith(prompt));
  const lp = r.choices[0].logprobs;
  assert.equal(lp.token_logprobs[0], null);
  assert.equal(lp.top_logprobs[0], null);
  assert.equal(lp.tokens.length, r.usage.prompt_tokens + 1);
  for (const x of lp.token_logprobs.slice(1)) assert.ok(x <= 0);
  assert.equal(lp.text_offset[r.usage.prompt_tokens], prompt.length);
});

// The log-probability extensions, passed through by the client as extra body fields: vLLM's
// prompt_logprobs (equal to echo's), our logprob_token_ids, processed logprobs.
await check('prompt_logprobs, logprob_token_ids, logprobs_mode', async () => {
  const prompt = 'Once upon a time';
  const r = await client.completions.create({
    model: 'stories260K', prompt, max_tokens: 3, temperature: 0, logprobs: 0, echo: true,
    prompt_logprobs: 1, logprob_token_ids: [1, 2],
  });
  const choice = r.choices[0];
  const n = r.usage.prompt_tokens;
  assert.equal(choice.prompt_logprobs.length, n);
  assert.equal(choice.prompt_logprobs[0], null);
  for (let i = 1; i < n; ++i) {
    const own = Object.values(choice.prompt_logprobs[i])[0];
    assert.equal(own.logprob, choice.logprobs.token_logprobs[i]);
    assert.equal(own.decoded_token, choice.logprobs.tokens[i]);
  }
  const named = choice.logprobs.token_id_logprobs;
  assert.equal(named.length, n + 3);
  assert.equal(named[n - 1], null);
  assert.deepEqual(named[n].map((t) => t.id), [1, 2]);
  const greedy = await client.chat.completions.create({
    model: 'stories260K', messages: [{ role: 'user', content: 'Tim' }], max_tokens: 4, temperature: 0,
    logprobs: true, top_logprobs: 2, logprobs_mode: 'processed_logprobs',
  });
  for (const t of greedy.choices[0].logprobs.content) {
    assert.equal(t.logprob, 0);
    assert.equal(t.top_logprobs.length, 1);
  }
});

// Structured output: response_format json_schema (strict) as the client sends it; greedy, the answer
// is JSON with exactly the schema's members in its order.
const person = {
  type: 'object',
  properties: { name: { type: 'string', maxLength: 12 }, age: { type: 'integer' } },
  required: ['name', 'age'], additionalProperties: false,
};
await check('response_format json_schema', async () => {
  const r = await client.chat.completions.create({
    model: 'stories260K', messages: [{ role: 'user', content: 'Lily had a cat.' }], temperature: 0, max_tokens: 80,
    response_format: { type: 'json_schema', json_schema: { name: 'person', strict: true, schema: person } },
  });
  const content = r.choices[0].message.content;
  const parsed = JSON.parse(content);
  assert.deepEqual(Object.keys(parsed), ['name', 'age']);
  assert.equal(typeof parsed.name, 'string');
  assert.ok(parsed.name.length <= 12);
  assert.ok(Number.isInteger(parsed.age));
  assert.equal(r.choices[0].finish_reason, 'stop');
  // The same streamed: the deltas make the same JSON.
  const stream = await client.chat.completions.create({
    model: 'stories260K', messages: [{ role: 'user', content: 'Lily had a cat.' }], temperature: 0, max_tokens: 80, stream: true,
    response_format: { type: 'json_schema', json_schema: { name: 'person', strict: true, schema: person } },
  });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  assert.equal(text, content);
  // A schema outside the subset: a 400 naming the field.
  await assert.rejects(client.chat.completions.create({
    model: 'stories260K', messages: [{ role: 'user', content: 'x' }],
    response_format: { type: 'json_schema', json_schema: { name: 'bad', strict: true, schema: { type: 'number', minimum: 1 } } },
  }), (e) => e instanceof OpenAI.BadRequestError && e.param === 'response_format');
});

// The client's zod helper (zodResponseFormat and .parse), when zod installed next to it.
let zod = null;
try {
  zod = { z: (await import('zod')).z, helper: await import('openai/helpers/zod') };
} catch (e) {
  console.log(`skip zod helper: ${e.message.split('\n')[0]}`);
}
if (zod) {
  await check('zod response format', async () => {
    const { z } = zod;
    const Pet = z.object({ name: z.string().max(12), kind: z.enum(['cat', 'dog', 'bird']), legs: z.number().int() });
    const r = await client.beta.chat.completions.parse({
      model: 'stories260K', messages: [{ role: 'user', content: 'Tom saw a dog.' }], temperature: 0, max_tokens: 80,
      response_format: zod.helper.zodResponseFormat(Pet, 'pet'),
    });
    const pet = r.choices[0].message.parsed;
    assert.ok(pet, r.choices[0].message.content);
    assert.deepEqual(Object.keys(pet), ['name', 'kind', 'legs']);
    assert.ok(['cat', 'dog', 'bird'].includes(pet.kind));
    assert.ok(Number.isInteger(pet.legs));
  });
}

// Tools: a named function forces a call (the grammar writes it even for this tiny model), whose
// arguments follow the schema; streamed, the client's accumulated tool_calls deltas equal it.
const weatherTool = {
  type: 'function',
  function: {
    name: 'get_weather', description: 'The weather in a city',
    parameters: {
      type: 'object', properties: { city: { type: 'string', enum: ['Paris', 'Oslo'] }, metric: { type: 'boolean' } },
      required: ['city', 'metric'], additionalProperties: false,
    },
  },
};
const toolParams = {
  model: 'stories260K', messages: [{ role: 'user', content: 'What is the weather in Oslo?' }], temperature: 0, max_tokens: 200,
  tools: [weatherTool], tool_choice: { type: 'function', function: { name: 'get_weather' } }, parallel_tool_calls: false,
};
await check('tools: a forced call', async () => {
  const r = await client.chat.completions.create(toolParams);
  const choice = r.choices[0];
  assert.equal(choice.finish_reason, 'tool_calls');
  assert.equal(choice.message.content, null);
  assert.equal(choice.message.tool_calls.length, 1);
  const call = choice.message.tool_calls[0];
  assert.equal(call.type, 'function');
  assert.match(call.id, /^call_[A-Za-z0-9]{24}$/);
  assert.equal(call.function.name, 'get_weather');
  const args = JSON.parse(call.function.arguments);
  assert.deepEqual(Object.keys(args).sort(), ['city', 'metric']);
  assert.ok(['Paris', 'Oslo'].includes(args.city));
  assert.equal(typeof args.metric, 'boolean');

  // Streamed: the deltas accumulated by hand and by the client's stream helper.
  const stream = await client.chat.completions.create({ ...toolParams, stream: true });
  const calls = [];
  let content = '';
  let finish = null;
  for await (const chunk of stream) {
    const c = chunk.choices[0];
    if (c?.delta?.content) content += c.delta.content;
    for (const d of c?.delta?.tool_calls ?? []) {
      if (!calls[d.index]) calls[d.index] = { id: d.id, name: d.function.name, arguments: '' };
      calls[d.index].arguments += d.function.arguments ?? '';
    }
    if (c?.finish_reason) finish = c.finish_reason;
  }
  assert.equal(content, '');
  assert.equal(finish, 'tool_calls');
  assert.equal(calls.length, 1);
  assert.match(calls[0].id, /^call_/);
  assert.equal(calls[0].name, 'get_weather');
  assert.equal(calls[0].arguments, call.function.arguments);
  const helper = client.beta.chat.completions.stream({ ...toolParams, stream: true });
  const final = await helper.finalChatCompletion();
  assert.equal(final.choices[0].finish_reason, 'tool_calls');
  assert.equal(final.choices[0].message.tool_calls[0].function.name, 'get_weather');
  assert.equal(final.choices[0].message.tool_calls[0].function.arguments, call.function.arguments);

  // The call and its result sent back: the conversation goes on (tool_choice none: an answer in text).
  const next = await client.chat.completions.create({
    ...toolParams, tool_choice: 'none', max_tokens: 5,
    messages: [...toolParams.messages, choice.message, { role: 'tool', tool_call_id: call.id, content: '-3 C' }],
  });
  assert.equal(typeof next.choices[0].message.content, 'string');
  assert.equal(next.choices[0].message.tool_calls, undefined);
  // A tool_choice naming no offered function: a 400 naming the field.
  await assert.rejects(client.chat.completions.create({ ...toolParams, tool_choice: { type: 'function', function: { name: 'nope' } } }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'tool_choice');
});

await check('errors', async () => {
  await assert.rejects(client.chat.completions.create({ model: 'stories260K', messages: [{ role: 'user', content: 'x' }], logprobs: true, top_logprobs: 100 }),
    (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && e.param === 'top_logprobs');
  await assert.rejects(client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] }),
    (e) => e instanceof OpenAI.NotFoundError && e.code === 'model_not_found');
  const anonymous = new OpenAI({ baseURL, apiKey: 'wrong', maxRetries: 0 });
  await assert.rejects(anonymous.models.list(), (e) => e instanceof OpenAI.AuthenticationError && e.status === 401);
});

console.log(`${passed} passed, 0 failed`);
