// A local OpenAI-compatible server for the LLM engine tests: node-llama-cpp's prebuilt llama.cpp (an npm
// package for linux-x64, nothing compiled) serving one GGUF model. What the tests use of the API:
//   GET  /v1/models
//   POST /v1/chat/completions  {model, messages, response_format: {type: "json_schema", json_schema: {schema}},
//                               max_tokens, temperature, seed}   -> choices[0].message.content, usage
// One request at a time (one context sequence, like llama-server --parallel 1); a client that hangs up
// aborts its generation. The answer to a json_schema request is constrained by a grammar built from the
// schema (cached per schema); a schema the grammar builder cannot express falls back to plain JSON.
//
//   node server.mjs --model FILE [--host 127.0.0.1] [--port 18089] [--threads 1] [--ctx-size 8192] [--alias NAME]
// It prints "listening <base url>" when ready.
import http from 'node:http';
import { parseArgs } from 'node:util';

import { getLlama, LlamaChatSession } from 'node-llama-cpp';

const { values } = parseArgs({
  options: {
    model: { type: 'string' },
    host: { type: 'string', default: '127.0.0.1' },
    port: { type: 'string', default: '18089' },
    threads: { type: 'string', default: '1' },
    'ctx-size': { type: 'string', default: '8192' },
    alias: { type: 'string', default: 'gemma3-270m' },
  },
});
if (!values.model) {
  console.error('--model FILE is required');
  process.exit(2);
}

// build: "never": the prebuilt binary or nothing (no download, no compiler at test time).
const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' });
const model = await llama.loadModel({ modelPath: values.model });
// One thread by default: on a shared 2-core machine a second one spins more than it computes.
const context = await model.createContext({ contextSize: Number(values['ctx-size']), threads: Number(values.threads) });
const sequence = context.getSequence();
const grammars = new Map();

async function grammarFor(format) {
  if (!format || format.type === 'text') return undefined;
  const schema = format.type === 'json_schema' ? format.json_schema?.schema : undefined;
  const key = JSON.stringify(schema ?? 'json');
  if (!grammars.has(key)) {
    let grammar;
    try {
      grammar = schema ? await llama.createGrammarForJsonSchema(schema) : await llama.getGrammarFor('json');
    } catch (error) {
      console.error(`schema not expressible as a grammar (${error.message}); plain JSON instead`);
      grammar = await llama.getGrammarFor('json');
    }
    grammars.set(key, grammar);
  }
  return grammars.get(key);
}

function text(content) {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((part) => (typeof part === 'string' ? part : part?.text ?? '')).join('');
  return '';
}

// messages -> node-llama-cpp chat history (the last user message is the prompt)
function history(messages) {
  const items = [];
  for (const message of messages.slice(0, -1)) {
    if (message.role === 'system') items.push({ type: 'system', text: text(message.content) });
    else if (message.role === 'assistant') items.push({ type: 'model', response: [text(message.content)] });
    else items.push({ type: 'user', text: text(message.content) });
  }
  return items;
}

let queue = Promise.resolve();

async function complete(body, signal) {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  if (!messages.length) throw Object.assign(new Error('messages is empty'), { status: 400 });
  const grammar = await grammarFor(body.response_format);
  const session = new LlamaChatSession({ contextSequence: sequence, autoDisposeSequence: false });
  try {
    session.setChatHistory(history(messages));
    const prompt = text(messages[messages.length - 1].content);
    const promptTokens = messages.reduce((n, m) => n + model.tokenize(text(m.content)).length, 0);
    let finish = 'stop';
    const started = performance.now();
    let firstChunkAt;
    const answer = await session.prompt(prompt, {
      grammar,
      maxTokens: Number(body.max_tokens ?? 256),
      temperature: Number(body.temperature ?? 0),
      seed: body.seed === undefined ? undefined : Number(body.seed),
      signal,
      stopOnAbortSignal: false,
      onResponseChunk: () => { firstChunkAt ??= performance.now(); },
    });
    const completionTokens = model.tokenize(answer).length;
    if (completionTokens >= Number(body.max_tokens ?? 256)) finish = 'length';
    // Counts and times only (never the text): where a slow test spends its time, prompt or generation.
    const ms = (t) => Math.round(t);
    console.log(`completion: prompt ${promptTokens} tokens in ${ms((firstChunkAt ?? performance.now()) - started)} ms, `
      + `${completionTokens} tokens generated in ${ms(performance.now() - (firstChunkAt ?? started))} ms (${finish})`);
    return {
      id: `chatcmpl-${Date.now()}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: values.alias,
      choices: [{ index: 0, message: { role: 'assistant', content: answer }, finish_reason: finish }],
      usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens },
    };
  } finally {
    // The sequence keeps its tokens: the next request re-evaluates only from where its prompt departs
    // from this one (node-llama-cpp compares the tokens). Consecutive requests of one engine share the
    // system prompt and the record summary, about 90% of each prompt, and a tiny model on one CPU
    // reads prompts at ~100 tokens/s: this halves the LLM tests' time.
    session.dispose({ disposeSequence: false });
  }
}

function send(res, status, payload) {
  const data = JSON.stringify(payload);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(data) });
  res.end(data);
}

const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://x');
  if (req.method === 'GET' && url.pathname === '/v1/models') {
    send(res, 200, { object: 'list', data: [{ id: values.alias, object: 'model', owned_by: 'local' }] });
    return;
  }
  if (req.method !== 'POST' || url.pathname !== '/v1/chat/completions') {
    send(res, 404, { error: { message: 'not found', type: 'invalid_request_error' } });
    return;
  }
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    let body;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
    } catch {
      send(res, 400, { error: { message: 'body is not JSON', type: 'invalid_request_error' } });
      return;
    }
    const abort = new AbortController();
    res.on('close', () => { if (!res.writableEnded) abort.abort(); });
    queue = queue.then(async () => {
      if (abort.signal.aborted) return;
      try {
        send(res, 200, await complete(body, abort.signal));
      } catch (error) {
        if (abort.signal.aborted) return;
        send(res, error.status ?? 500, { error: { message: String(error.message).slice(0, 200), type: 'server_error' } });
      }
    });
  });
});
server.listen(Number(values.port), values.host, () => {
  console.log(`listening http://${values.host}:${server.address().port}`);
});
