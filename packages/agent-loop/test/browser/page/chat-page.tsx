// The page of the useChat browser test (usechat-browser.test.ts), bundled by esbuild and run in
// Chromium: docs/agents.md shows this code from the line after this comment (the test checks it
// is the same). Type-checked by this folder's tsconfig.json (JSX, DOM).
import { useChat } from '@ai-sdk/react';
import type { Question } from '@loom/agent-loop';
import type { UIMessage } from 'ai';
import { useState } from 'react';
import { createRoot } from 'react-dom/client';

// What the support agent's stream carries besides text: the question it asks a person, and its
// answer as the agent's `output` schema types it.
type SupportMessage = UIMessage<
  unknown,
  {
    'loom-question': Omit<Question, 'status'>;
    'loom-output': { reply: string; orderId: string };
  }
>;

function SupportChat() {
  // POSTs to /api/chat; on mount, resumes a running turn from /api/chat/chat-ana/stream.
  const { messages, sendMessage, status, error } = useChat<SupportMessage>({
    id: 'chat-ana',
    resume: true,
  });
  const [input, setInput] = useState('');
  return (
    <main>
      {messages.map((message) => (
        <section key={message.id} className={message.role}>
          {message.parts.map((part, index) => {
            const key = `${message.id}-${index}`;
            switch (part.type) {
              case 'text':
                return (
                  <p key={key} className="text">
                    {part.text}
                  </p>
                );
              case 'data-loom-question':
                return (
                  <p key={key} className="question" data-question-id={part.data.id}>
                    {part.data.question}
                  </p>
                );
              case 'data-loom-output':
                return (
                  <dl key={key} className="output">
                    <dt>Order</dt>
                    <dd className="order-id">{part.data.orderId}</dd>
                    <dt>Reply</dt>
                    <dd className="reply">{part.data.reply}</dd>
                  </dl>
                );
              default:
                return null;
            }
          })}
        </section>
      ))}
      {error === undefined ? null : <p role="alert">{error.message}</p>}
      <form
        onSubmit={(event) => {
          event.preventDefault();
          void sendMessage({ text: input });
          setInput('');
        }}
      >
        <input value={input} onChange={(event) => setInput(event.target.value)} />
        <button type="submit" disabled={status === 'submitted' || status === 'streaming'}>
          Send
        </button>
      </form>
      <output className="status">{status}</output>
    </main>
  );
}

const root = document.getElementById('root');
if (root === null) throw new Error('the page has no #root element');
createRoot(root).render(<SupportChat />);
