// The conformance computer's tools (computer.mjs), with the names, arguments and texts
// the suite's scenarios expect.
import { CreateMessageResultSchema, ElicitResultSchema } from '@modelcontextprotocol/sdk/types.js';
import {
  CAPABILITY_OF,
  Code,
  PNG,
  WAV,
  accepted,
  ask,
  gather,
  inputResponsesOf,
  invalidParams,
  noArguments,
  openState,
  rpcError,
  sampledText,
  sealState,
  sleep,
  text
} from './computer_wire.mjs';
import { announce } from './computer_content.mjs';

// ---- the tools, with the names, arguments and texts the suite's scenarios expect ----


// Each tool: what tools/list shows, the revisions it is listed and callable at, and
// run(arguments, call) -> result. `call` is the request as one handler sees it on any
// transport (see `newCall`).
const tools = [
  {
    // First in the list: the suite's header checks call the first tool with no arguments.
    name: 'test_simple_text',
    description: 'Returns one text item',
    inputSchema: noArguments,
    run: async () => ({ content: [text('This is a simple text response for testing.')] })
  },
  {
    name: 'test_image_content',
    description: 'Returns a 1x1 red PNG',
    inputSchema: noArguments,
    run: async () => ({ content: [{ type: 'image', data: PNG, mimeType: 'image/png' }] })
  },
  {
    name: 'test_audio_content',
    description: 'Returns a short silent WAV',
    inputSchema: noArguments,
    run: async () => ({ content: [{ type: 'audio', data: WAV, mimeType: 'audio/wav' }] })
  },
  {
    name: 'test_embedded_resource',
    description: 'Returns an embedded text resource',
    inputSchema: noArguments,
    run: async () => ({
      content: [
        {
          type: 'resource',
          resource: {
            uri: 'test://embedded-resource',
            mimeType: 'text/plain',
            text: 'This is an embedded resource content.'
          }
        }
      ]
    })
  },
  {
    name: 'test_multiple_content_types',
    description: 'Returns text, an image and a resource',
    inputSchema: noArguments,
    run: async () => ({
      content: [
        text('Multiple content types test:'),
        { type: 'image', data: PNG, mimeType: 'image/png' },
        {
          type: 'resource',
          resource: {
            uri: 'test://mixed-content-resource',
            mimeType: 'application/json',
            text: JSON.stringify({ test: 'data', value: 123 })
          }
        }
      ]
    })
  },
  {
    name: 'test_tool_with_logging',
    description: 'Sends three info log messages while it runs',
    inputSchema: noArguments,
    run: async (_arguments, call) => {
      await call.log('info', 'Tool execution started');
      await sleep(50);
      await call.log('info', 'Tool processing data');
      await sleep(50);
      await call.log('info', 'Tool execution completed');
      return { content: [text('Tool with logging executed successfully')] };
    }
  },
  {
    name: 'test_tool_with_progress',
    description: 'Reports progress 0, 50 and 100 of 100 when given a progress token',
    inputSchema: noArguments,
    run: async (_arguments, call) => {
      const token = call.params._meta?.progressToken;
      for (const progress of [0, 50, 100]) {
        if (progress) await sleep(50);
        if (token === undefined) continue;
        await call.notify({
          method: 'notifications/progress',
          params: {
            progressToken: token,
            progress,
            total: 100,
            message: `Completed step ${progress} of 100`
          }
        });
      }
      return { content: [text(`Progress reported for token ${JSON.stringify(token ?? null)}`)] };
    }
  },
  {
    name: 'test_error_handling',
    description: 'Always fails with isError',
    inputSchema: noArguments,
    run: async () => ({
      isError: true,
      content: [text('This tool intentionally returns an error for testing')]
    })
  },
  {
    name: 'json_schema_2020_12_tool',
    description: 'Tool with JSON Schema 2020-12 features',
    inputSchema: {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      $defs: {
        address: {
          $anchor: 'addressDef',
          type: 'object',
          properties: { street: { type: 'string' }, city: { type: 'string' } }
        }
      },
      properties: {
        name: { type: 'string' },
        address: { $ref: '#/$defs/address' },
        contactMethod: { type: 'string', enum: ['phone', 'email'] },
        phone: { type: 'string' },
        email: { type: 'string' }
      },
      allOf: [{ anyOf: [{ required: ['phone'] }, { required: ['email'] }] }],
      if: { properties: { contactMethod: { const: 'phone' } }, required: ['contactMethod'] },
      then: { required: ['phone'] },
      else: { required: ['email'] },
      additionalProperties: false
    },
    run: async (toolArguments) => ({ content: [text(JSON.stringify(toolArguments))] })
  },
  {
    // A 2026-07-28 caller repeats `region` in the Mcp-Param-Region header (SEP-2243);
    // over HTTP the two must agree (checked where the headers are seen).
    name: 'test_header_param',
    description: 'Echoes its region, which a 2026-07-28 caller also sends as Mcp-Param-Region',
    inputSchema: {
      type: 'object',
      properties: {
        region: { type: 'string', description: 'Any text', 'x-mcp-header': 'Region' }
      },
      required: ['region']
    },
    run: async ({ region }) => ({ content: [text(`Region: ${region}`)] })
  },
  {
    // Not a suite fixture: the tracing test (traces.mjs) reads what a switchboard put in
    // front of it. With a progress token it reports progress 0 first, so that its caller
    // knows it runs; `wait_ms` holds it until then or until it is cancelled.
    name: 'test_trace_context',
    description: "Answers with the request's params._meta, trace context included",
    inputSchema: {
      type: 'object',
      properties: {
        wait_ms: { type: 'integer', minimum: 0, maximum: 60000 },
        note: { type: 'string', description: 'Any text; not echoed' }
      }
    },
    run: async ({ wait_ms: wait = 0 }, call) => {
      const meta = call.params._meta ?? {};
      if (meta.progressToken !== undefined)
        await call.notify({
          method: 'notifications/progress',
          params: { progressToken: meta.progressToken, progress: 0, total: 1 }
        });
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, Number(wait) || 0);
        call.signal?.addEventListener('abort', () => resolve(clearTimeout(timer)), { once: true });
      });
      return { content: [text(JSON.stringify(meta))] };
    }
  },

  // -- 2025 only: the server asks the caller during the call, or closes its stream --

  {
    // The suite's SSE polling scenario calls it: over HTTP it closes the call's event
    // stream at once (the caller resumes it with Last-Event-ID), then answers.
    name: 'test_reconnection',
    revisions: ['2025'],
    description: 'Closes its event stream, then answers after a pause',
    inputSchema: noArguments,
    // Through a switchboard, which cannot be asked to close its caller's stream, the pause
    // outlasts the poll_secs after which the switchboard ends a quiet call's stream itself.
    run: async (_arguments, call) => {
      call.closeStream?.();
      await sleep(1500);
      return { content: [text('Reconnection test completed successfully.')] };
    }
  },
  {
    name: 'test_sampling',
    revisions: ['2025'],
    description: 'Asks the caller for an LLM completion',
    inputSchema: {
      type: 'object',
      properties: { prompt: { type: 'string', description: 'The prompt to send to the LLM' } },
      required: ['prompt']
    },
    run: async ({ prompt }, call) => {
      const result = await call.request(ask.sample(String(prompt), 100), CreateMessageResultSchema);
      return { content: [text(`LLM response: ${sampledText(result)}`)] };
    }
  },
  {
    name: 'test_elicitation',
    revisions: ['2025'],
    description: 'Asks the caller for a user name and email',
    inputSchema: {
      type: 'object',
      properties: { message: { type: 'string', description: 'The message to show the user' } },
      required: ['message']
    },
    run: async ({ message }, call) => {
      const result = await call.request(
        {
          method: 'elicitation/create',
          params: {
            message: String(message),
            requestedSchema: {
              type: 'object',
              properties: {
                username: { type: 'string', description: "User's response" },
                email: { type: 'string', description: "User's email address" }
              },
              required: ['username', 'email']
            }
          }
        },
        ElicitResultSchema
      );
      return { content: [text(`User response: ${describe(result)}`)] };
    }
  },
  {
    name: 'test_elicitation_sep1034_defaults',
    revisions: ['2025'],
    description: 'Elicitation whose schema has a default for every primitive type',
    inputSchema: noArguments,
    run: async (_arguments, call) => {
      const result = await call.request(
        {
          method: 'elicitation/create',
          params: {
            message: 'Please review and update the form fields with defaults',
            requestedSchema: {
              type: 'object',
              properties: {
                name: { type: 'string', description: 'User name', default: 'John Doe' },
                age: { type: 'integer', description: 'User age', default: 30 },
                score: { type: 'number', description: 'User score', default: 95.5 },
                status: {
                  type: 'string',
                  description: 'User status',
                  enum: ['active', 'inactive', 'pending'],
                  default: 'active'
                },
                verified: { type: 'boolean', description: 'Verification status', default: true }
              }
            }
          }
        },
        ElicitResultSchema
      );
      return { content: [text(`Elicitation completed: ${describe(result)}`)] };
    }
  },
  {
    name: 'test_elicitation_sep1330_enums',
    revisions: ['2025'],
    description: 'Elicitation with all five enum schema variants',
    inputSchema: noArguments,
    run: async (_arguments, call) => {
      const result = await call.request(
        {
          method: 'elicitation/create',
          params: {
            message: 'Please pick from each kind of list',
            requestedSchema: {
              type: 'object',
              properties: {
                untitledSingle: {
                  type: 'string',
                  description: 'Untitled single-select',
                  enum: ['option1', 'option2', 'option3']
                },
                titledSingle: {
                  type: 'string',
                  description: 'Titled single-select',
                  oneOf: [
                    { const: 'value1', title: 'First Option' },
                    { const: 'value2', title: 'Second Option' },
                    { const: 'value3', title: 'Third Option' }
                  ]
                },
                legacyEnum: {
                  type: 'string',
                  description: 'Legacy titled single-select',
                  enum: ['opt1', 'opt2', 'opt3'],
                  enumNames: ['Option One', 'Option Two', 'Option Three']
                },
                untitledMulti: {
                  type: 'array',
                  description: 'Untitled multi-select',
                  items: { type: 'string', enum: ['option1', 'option2', 'option3'] }
                },
                titledMulti: {
                  type: 'array',
                  description: 'Titled multi-select',
                  items: {
                    anyOf: [
                      { const: 'value1', title: 'First Choice' },
                      { const: 'value2', title: 'Second Choice' },
                      { const: 'value3', title: 'Third Choice' }
                    ]
                  }
                }
              }
            }
          }
        },
        ElicitResultSchema
      );
      return { content: [text(`Elicitation completed: ${describe(result)}`)] };
    }
  },

  // -- 2026-07-28 only: what the stateless revision checks --

  {
    name: 'test_missing_capability',
    revisions: ['2026'],
    description: 'Needs the sampling capability: -32021 when the request does not declare it',
    inputSchema: noArguments,
    requires: ['sampling'],
    run: async () => ({ content: [text('The request declared sampling.')] })
  },
  {
    // Elicitation the 2026-07-28 way: on the call's own stream nothing but notifications
    // and the answer, which asks through inputRequests instead of a request of its own.
    name: 'test_streaming_elicitation',
    revisions: ['2026'],
    description: 'Asks for a confirmation through an InputRequiredResult, never a request',
    inputSchema: noArguments,
    requires: ['elicitation'],
    run: async (_arguments, call) => {
      const token = call.params._meta?.progressToken;
      if (token !== undefined)
        await call.notify({
          method: 'notifications/progress',
          params: { progressToken: token, progress: 1, total: 2, message: 'Asking' }
        });
      return gather(
        call,
        { confirm: ask.elicit('Proceed?', { ok: { type: 'boolean' } }) },
        ({ confirm }) => ({ content: [text(`Confirmed: ${accepted(confirm)?.ok === true}`)] })
      );
    }
  },
  {
    name: 'test_logging_tool',
    revisions: ['2026'],
    description: "Logs one info message, only when the request's _meta asks for a log level",
    inputSchema: noArguments,
    run: async (_arguments, call) => {
      await call.log('info', 'test_logging_tool ran');
      return { content: [text('Logged where the request asked for it.')] };
    }
  },
  {
    name: 'test_trigger_tool_change',
    revisions: ['2026'],
    description: 'Announces notifications/tools/list_changed to the listening subscriptions',
    inputSchema: noArguments,
    run: async () => {
      announce('toolsListChanged', 'notifications/tools/list_changed');
      return { content: [text('Tool list change announced.')] };
    }
  },
  {
    name: 'test_trigger_prompt_change',
    revisions: ['2026'],
    description: 'Announces notifications/prompts/list_changed to the listening subscriptions',
    inputSchema: noArguments,
    run: async () => {
      announce('promptsListChanged', 'notifications/prompts/list_changed');
      return { content: [text('Prompt list change announced.')] };
    }
  },
  {
    name: 'test_input_required_result_elicitation',
    revisions: ['2026'],
    description: "Asks the caller's user for a name, then greets them",
    inputSchema: noArguments,
    requires: ['elicitation'],
    run: async (_arguments, call) =>
      gather(
        call,
        { user_name: ask.elicit('What is your name?', { name: { type: 'string' } }) },
        ({ user_name }) => {
          const name = accepted(user_name)?.name;
          return { content: [text(name ? `Hello, ${name}!` : 'No name was given.')] };
        }
      )
  },
  {
    name: 'test_input_required_result_sampling',
    revisions: ['2026'],
    description: "Asks the caller's LLM a question, then quotes the answer",
    inputSchema: noArguments,
    requires: ['sampling'],
    run: async (_arguments, call) =>
      gather(
        call,
        { capital_question: ask.sample('What is the capital of France?', 100) },
        ({ capital_question }) => ({
          content: [text(`The LLM answered: ${sampledText(capital_question)}`)]
        })
      )
  },
  {
    name: 'test_input_required_result_list_roots',
    revisions: ['2026'],
    description: "Asks for the caller's roots, then lists them",
    inputSchema: noArguments,
    requires: ['roots'],
    run: async (_arguments, call) =>
      gather(call, { client_roots: ask.roots() }, ({ client_roots }) => {
        const roots = Array.isArray(client_roots.roots) ? client_roots.roots : [];
        return { content: [text(`Roots: ${roots.map((root) => root.uri).join(', ') || 'none'}`)] };
      })
  },
  {
    name: 'test_input_required_result_request_state',
    revisions: ['2026'],
    description: 'Asks for a confirmation and keeps its progress in requestState',
    inputSchema: noArguments,
    requires: ['elicitation'],
    run: async (_arguments, call) => {
      const { params } = call;
      // A retry must bring back the state this tool sealed.
      if (inputResponsesOf(params).confirm !== undefined) {
        if (!('requestState' in params))
          throw invalidParams('a retry of this tool must echo its requestState');
        openState(params.name, params.requestState);
      }
      return gather(
        call,
        { confirm: ask.elicit('Please confirm', { ok: { type: 'boolean' } }) },
        ({ confirm }) => ({
          content: [text(`state-ok: confirmed=${accepted(confirm)?.ok === true}`)]
        }),
        { step: 'confirm' }
      );
    }
  },
  {
    name: 'test_input_required_result_multiple_inputs',
    revisions: ['2026'],
    description: 'Asks for a name, a greeting and the roots at once',
    inputSchema: noArguments,
    requires: ['elicitation', 'sampling', 'roots'],
    run: async (_arguments, call) => {
      if ('requestState' in call.params) openState(call.params.name, call.params.requestState);
      return gather(
        call,
        {
          user_name: ask.elicit('What is your name?', { name: { type: 'string' } }),
          greeting: ask.sample('Generate a greeting', 50),
          client_roots: ask.roots()
        },
        ({ user_name, greeting, client_roots }) => ({
          content: [
            text(
              `${sampledText(greeting)} ${accepted(user_name)?.name ?? 'stranger'}; ` +
                `${client_roots.roots?.length ?? 0} root(s)`
            )
          ]
        }),
        { step: 'all' }
      );
    }
  },
  {
    name: 'test_input_required_result_multi_round',
    revisions: ['2026'],
    description: 'Asks for a name, then for a favourite colour, then answers',
    inputSchema: noArguments,
    requires: ['elicitation'],
    run: async (_arguments, call) => {
      const { params } = call;
      const state = 'requestState' in params ? openState(params.name, params.requestState) : null;
      const responses = inputResponsesOf(params);
      if (state?.round === 2) {
        return gather(
          call,
          { step2: ask.elicit('What is your favourite colour?', { color: { type: 'string' } }) },
          ({ step2 }) => ({
            content: [text(`${state.name} likes ${accepted(step2)?.color ?? 'no colour'}`)]
          }),
          state
        );
      }
      const step1 = ask.elicit('What is your name?', { name: { type: 'string' } });
      if (responses.step1 === undefined) return gather(call, { step1 }, () => null, { round: 1 });
      const name = accepted(responses.step1)?.name ?? 'someone';
      return {
        resultType: 'input_required',
        inputRequests: {
          step2: ask.elicit('What is your favourite colour?', { color: { type: 'string' } })
        },
        requestState: sealState(params.name, { round: 2, name })
      };
    }
  },
  {
    name: 'test_input_required_result_tampered_state',
    revisions: ['2026'],
    description: 'Keeps signed requestState and refuses one that was changed',
    inputSchema: noArguments,
    requires: ['elicitation'],
    run: async (_arguments, call) => {
      const { params } = call;
      if ('requestState' in params) openState(params.name, params.requestState);
      else if (inputResponsesOf(params).confirm !== undefined)
        throw invalidParams('a retry of this tool must echo its requestState');
      return gather(
        call,
        { confirm: ask.elicit('Please confirm', { ok: { type: 'boolean' } }) },
        () => ({ content: [text('The state was intact.')] }),
        { step: 'confirm' }
      );
    }
  },
  {
    name: 'test_input_required_result_capabilities',
    revisions: ['2026'],
    description: 'Asks only through what the request declares it can answer',
    inputSchema: noArguments,
    run: async (_arguments, call) => {
      const possible = {
        user_name: ask.elicit('What is your name?', { name: { type: 'string' } }),
        sample_request: ask.sample('Say hello', 20),
        roots_request: ask.roots()
      };
      const wanted = Object.fromEntries(
        Object.entries(possible).filter(([, request]) =>
          call.declares(CAPABILITY_OF[request.method])
        )
      );
      if (Object.keys(wanted).length === 0)
        throw rpcError(Code.MissingCapability, 'this tool needs elicitation, sampling or roots', {
          requiredCapabilities: { sampling: {} }
        });
      return gather(call, wanted, (answers) => ({
        content: [text(`Answered: ${Object.keys(answers).sort().join(', ')}`)]
      }));
    }
  }
];

function describe(result) {
  return `action=${result.action}, content=${JSON.stringify(result.content ?? {})}`;
}

export { tools };
