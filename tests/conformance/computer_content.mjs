// The conformance computer's resources, their watching and subscriptions/listen streams,
// and its prompts (computer.mjs).
import { PNG, accepted, ask, gather, invalidParams, text } from './computer_wire.mjs';

// ---- resources: two static ones, one that changes while watched, and a template ----

const WATCHED = 'test://watched-resource';
let watchedRevision = 1;

// Each has what resources/list shows, read(uri), its contents entry, and how long a
// 2026-07-28 caller may keep it.
const resources = [
  {
    uri: 'test://static-text',
    name: 'static-text',
    title: 'Static Text Resource',
    description: 'A fixed text',
    mimeType: 'text/plain',
    cache: { ttlMs: 60_000, cacheScope: 'public' },
    read: (uri) => ({
      uri,
      mimeType: 'text/plain',
      text: 'This is the content of the static text resource.'
    })
  },
  {
    uri: 'test://static-binary',
    name: 'static-binary',
    title: 'Static Binary Resource',
    description: 'A 1x1 red PNG',
    mimeType: 'image/png',
    cache: { ttlMs: 60_000, cacheScope: 'public' },
    read: (uri) => ({ uri, mimeType: 'image/png', blob: PNG })
  },
  {
    uri: WATCHED,
    name: 'watched-resource',
    title: 'Watched Resource',
    description: 'A text that changes every second while someone is subscribed to it',
    mimeType: 'text/plain',
    cache: { ttlMs: 0, cacheScope: 'public' },
    read: (uri) => ({
      uri,
      mimeType: 'text/plain',
      text: `Watched resource, revision ${watchedRevision}`
    })
  }
];

// A template's match(uri) gives its variables, or nothing; complete lists the candidates
// completion/complete offers for each variable.
const templates = [
  {
    uriTemplate: 'test://template/{id}/data',
    name: 'template',
    title: 'Resource Template',
    description: 'JSON data for any id',
    mimeType: 'application/json',
    cache: { ttlMs: 60_000, cacheScope: 'public' },
    match: (uri) => /^test:\/\/template\/([^/]+)\/data$/.exec(uri)?.slice(1),
    read: (uri, [id]) => ({
      uri,
      mimeType: 'application/json',
      text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` })
    }),
    complete: { id: ['123', '456', '789'] }
  }
];

// The contents and cache hints of uri, a static resource or one a template makes;
// -32602 with the URI otherwise (never an empty contents).
function readResource(uri) {
  const resource = resources.find((candidate) => candidate.uri === uri);
  if (resource) return { contents: [resource.read(uri)], cache: resource.cache };
  for (const template of templates) {
    const variables = template.match(uri);
    if (variables) return { contents: [template.read(uri, variables)], cache: template.cache };
  }
  throw invalidParams('Resource not found', { uri });
}

// ---- watching: the watched resource changes every second while anyone watches it ----

// Each watcher is a function of the URI that changed: a 2025 session's subscription, or a
// 2026 subscriptions/listen stream that named the resource.
const watchers = new Set();
let ticker = null;

function watch(watcher, on) {
  if (on) watchers.add(watcher);
  else watchers.delete(watcher);
  if (watchers.size > 0 && !ticker) {
    ticker = setInterval(() => {
      watchedRevision += 1;
      for (const notify of watchers) notify(WATCHED);
    }, 1000);
  } else if (watchers.size === 0 && ticker) {
    clearInterval(ticker);
    ticker = null;
  }
}

// ---- subscriptions/listen streams (2026-07-28): each with what it asked for ----

const listens = new Set();
// The stateful sessions' servers, which announce list changes as the older revisions do
// (on the session's GET stream; a switchboard in front relays them to its listeners).
const statefulServers = new Set();

function announce(filterKey, method) {
  for (const listen of listens) if (listen.filter[filterKey]) listen.send(method);
  for (const server of statefulServers) server.notification({ method }).catch(() => {});
}

// ---- prompts, with the names, arguments and messages the suite's scenarios expect ----

const user = (content) => ({ role: 'user', content });

// Each has what prompts/list shows, get(arguments, call), its messages (or an
// InputRequiredResult), and complete, the candidates completion/complete offers for each
// argument.
const prompts = [
  {
    name: 'test_simple_prompt',
    title: 'Simple Test Prompt',
    description: 'A prompt without arguments',
    get: () => [user(text('This is a simple prompt for testing.'))]
  },
  {
    name: 'test_prompt_with_arguments',
    title: 'Prompt With Arguments',
    description: 'A prompt that quotes its two arguments',
    arguments: [
      { name: 'arg1', description: 'First test argument', required: true },
      { name: 'arg2', description: 'Second test argument', required: true }
    ],
    get: ({ arg1, arg2 }) => [user(text(`Prompt with arguments: arg1='${arg1}', arg2='${arg2}'`))],
    complete: { arg1: ['testValue1', 'hello'], arg2: ['testValue2', 'world'] }
  },
  {
    name: 'test_prompt_with_embedded_resource',
    title: 'Prompt With Embedded Resource',
    description: 'A prompt that embeds a text resource at the URI it is given',
    arguments: [
      { name: 'resourceUri', description: 'URI of the resource to embed', required: true }
    ],
    get: ({ resourceUri }) => [
      user({
        type: 'resource',
        resource: {
          uri: resourceUri,
          mimeType: 'text/plain',
          text: 'Embedded resource content for testing.'
        }
      }),
      user(text('Please process the embedded resource above.'))
    ],
    complete: { resourceUri: resources.map((resource) => resource.uri) }
  },
  {
    name: 'test_prompt_with_image',
    title: 'Prompt With Image',
    description: 'A prompt that shows a 1x1 red PNG',
    get: () => [
      user({ type: 'image', data: PNG, mimeType: 'image/png' }),
      user(text('Please analyze the image above.'))
    ]
  },
  {
    name: 'test_input_required_result_prompt',
    revisions: ['2026'],
    title: 'Prompt That Asks First',
    description: 'Asks the user for the context the prompt should use',
    requires: ['elicitation'],
    get: (_arguments, call) =>
      gather(
        call,
        {
          user_context: ask.elicit('What context should the prompt use?', {
            context: { type: 'string' }
          })
        },
        ({ user_context }) => [
          user(text(`Use this context: ${accepted(user_context)?.context ?? '(none given)'}`))
        ]
      )
  }
];

const promptByName = new Map(prompts.map((prompt) => [prompt.name, prompt]));

export {
  WATCHED,
  announce,
  listens,
  promptByName,
  prompts,
  readResource,
  resources,
  statefulServers,
  templates,
  watch
};
