// The official `openai` npm client against `switchyard gateway` in front of two emulated engines
// on OS-chosen loopback ports: audio transcriptions and translations (multipart uploads),
// images.generate, and videos (create, poll through the job owner, download the content).
// Run: SWITCHYARD_BIN=build/release/switchyard node --test tests/npm/
// Skipped when the client is not installed (`npm install --prefix tests/npm`, make deps).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

let OpenAI;
let toFile;
try {
  ({ default: OpenAI, toFile } = await import('openai'));
} catch {
  OpenAI = null;
}
const bin = process.env.SWITCHYARD_BIN;
const skip = !OpenAI ? 'the openai npm client is not installed' :
             !bin ? 'SWITCHYARD_BIN is not set' : false;

const children = [];
let dir;
let client;

// Starts `switchyard ARGS...` and resolves with the ports of its "listening ..." line.
function start(args) {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(child);
    const timer = setTimeout(() => reject(new Error(`${args[0]} did not start`)), 10000);
    let out = '';
    child.stdout.on('data', (data) => {
      out += data;
      const line = out.split('\n').find((l) => l.startsWith('listening '));
      if (line) {
        clearTimeout(timer);
        resolve(line.slice(10).trim().split(' ').map((a) => Number(a.split(':').pop())));
      }
    });
    child.on('exit', (code) => reject(new Error(`${args[0]} exited with ${code}`)));
  });
}

before(async () => {
  if (skip) return;
  const [a100] = await start(['engine', '--gpu', 'A100', '--model', 'llama2-7b',
                              '--listen', '127.0.0.1:0']);
  const [l20] = await start(['engine', '--gpu', 'L20', '--model', 'llama2-7b',
                             '--listen', '127.0.0.1:0']);
  dir = mkdtempSync(join(tmpdir(), 'switchyard-npm-'));
  const config = join(dir, 'gateway.yaml');
  writeFileSync(config, `listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
workers: 2
models:
  - name: llama2-7b
    routing_strategy: round-robin
    replicas:
      - { address: 127.0.0.1:${a100}, labels: { gpu: A100 } }
      - { address: 127.0.0.1:${l20}, labels: { gpu: L20 } }
`);
  const [port] = await start(['gateway', '--config', config]);
  client = new OpenAI({ apiKey: 'unused', baseURL: `http://127.0.0.1:${port}/v1`,
                        maxRetries: 0, timeout: 20000 });
});

after(async () => {
  for (const child of children.reverse()) {
    if (child.exitCode !== null) continue;
    const exited = new Promise((resolve) => child.on('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
});

// Two seconds of silent 16 kHz 16-bit mono PCM in a WAV header.
function wav(seconds = 2) {
  const samples = 16000 * seconds;
  const buf = Buffer.alloc(44 + samples * 2);
  buf.write('RIFF', 0); buf.writeUInt32LE(36 + samples * 2, 4); buf.write('WAVE', 8);
  buf.write('fmt ', 12); buf.writeUInt32LE(16, 16); buf.writeUInt16LE(1, 20);
  buf.writeUInt16LE(1, 22); buf.writeUInt32LE(16000, 24); buf.writeUInt32LE(32000, 28);
  buf.writeUInt16LE(2, 32); buf.writeUInt16LE(16, 34);
  buf.write('data', 36); buf.writeUInt32LE(samples * 2, 40);
  return buf;
}

test('audio.transcriptions.create', { skip }, async () => {
  const file = await toFile(wav(), 'speech.wav', { type: 'audio/wav' });
  const result = await client.audio.transcriptions.create({ file, model: 'llama2-7b' });
  assert.equal(typeof result.text, 'string');
  assert.ok(result.text.length > 0);
  const text = await client.audio.transcriptions.create({
    file: await toFile(wav(1), 'speech.wav'), model: 'llama2-7b', response_format: 'text' });
  assert.equal(typeof text, 'string');
});

test('audio.translations.create', { skip }, async () => {
  const file = await toFile(wav(), 'speech.wav', { type: 'audio/wav' });
  const result = await client.audio.translations.create({ file, model: 'llama2-7b' });
  assert.ok(result.text.length > 0);
});

test('audio with an unknown model is a 404 the client raises', { skip }, async () => {
  const file = await toFile(wav(1), 'speech.wav');
  await assert.rejects(client.audio.transcriptions.create({ file, model: 'whisper-9' }),
                       (e) => e.status === 404 && e.code === 'model_not_found');
});

test('images.generate', { skip }, async () => {
  const result = await client.images.generate({ model: 'llama2-7b', prompt: 'a switchyard',
                                                n: 2, size: '256x256' });
  assert.equal(result.data.length, 2);
  assert.ok(result.data[0].b64_json.length > 0);
});

test('videos: create, poll on the owner, download', { skip }, async () => {
  const created = await client.videos.create({ model: 'llama2-7b', prompt: 'trains at night',
                                               seconds: '4', size: '720x1280' });
  assert.match(created.id, /^video_/);
  let video = created;
  const deadline = Date.now() + 15000;
  while (video.status !== 'completed' && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    video = await client.videos.retrieve(created.id);  // round-robin: only the owner knows it
  }
  assert.equal(video.status, 'completed');
  const content = await client.videos.downloadContent(created.id);
  const bytes = Buffer.from(await content.arrayBuffer());
  assert.equal(bytes.subarray(4, 8).toString(), 'ftyp');
});
