import { type BlueprintNode, type HistoryStep, renderMessages } from '@loom/render';

// Two steps of a support agent's run: a tool result, then a call the policy denied.
const steps: HistoryStep[] = [
  {
    text: 'Reading the ticket first.',
    calls: [{ callId: 'c1', tool: 'get_ticket', input: { id: 4521 } }],
    observations: [
      { kind: 'tool_result', callId: 'c1', content: { subject: 'Refund missing', daysOpen: 12 } },
    ],
  },
  {
    calls: [{ callId: 'c2', tool: 'refund', input: { id: 4521, amountCents: 12_000 } }],
    observations: [{ kind: 'denied', callId: 'c2', reason: 'refunds over 100 EUR need approval' }],
  },
];

const blueprint: BlueprintNode = {
  kind: 'group',
  children: [
    { kind: 'system', text: 'You triage support tickets. Be brief.', required: true },
    {
      kind: 'tools',
      required: true,
      tools: [
        {
          name: 'refund',
          description: 'Refund an order',
          inputSchema: { type: 'object', properties: { id: { type: 'number' } } },
        },
      ],
    },
    { kind: 'user', text: 'Triage ticket 4521.', required: true },
    // Older steps drop first when the budget is short; the newest step never drops.
    { kind: 'history', steps, keepLast: 1, priority: 1 },
  ],
};

export const prompt = renderMessages(blueprint, { tokenBudget: 80 });
// prompt.messages: the system text, the task, then step 1 (the refund call and its denial).
// prompt.dropped:  [{ kind: 'history_step', path: [3], step: 0, priority: 1, tokens: 30 }]
// prompt.tools:    the refund tool, for the request's tool list.
