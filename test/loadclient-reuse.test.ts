/**
 * sm121 bench's load client and a server that closes a kept-alive connection as the next request
 * goes out on it (a proxy's idle timeout racing the client): the request goes once more on a
 * connection of its own, so no request is lost to the race; an answer that breaks off is an error.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { runLoad } from "../src/serve/loadclient";

const sse = ['data: {"choices":[{"delta":{"content":"a"}}]}', "data: [DONE]", ""].join("\n\n");

/** A server that serves the first request of each connection and cuts the ones after it. */
function server(cutAnswered: boolean): Promise<{ url: string; srv: Server; seen: () => number }> {
  let seen = 0;
  const srv = createServer((req, res) => {
    seen++;
    const first = req.socket.listenerCount("sm121-served") === 0;
    req.socket.on("sm121-served", () => undefined);
    req.resume();
    req.on("end", () => {
      if (!first) {
        if (cutAnswered) {
          res.writeHead(200, { "content-type": "text/event-stream" });
          res.write('data: {"choices":[{"delta":{"content":"a"}}]}\n\n', () => req.socket.destroy());
        } else req.socket.destroy();
        return;
      }
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.end(sse);
    });
  });
  return new Promise((resolve) =>
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as AddressInfo;
      resolve({ url: `http://127.0.0.1:${port}`, srv, seen: () => seen });
    }),
  );
}

/** `requests` one after another, each on the connection the last one left open. */
const oneAtATime = (url: string, requests: number) =>
  runLoad({ urls: [url], model: "m", requests, concurrency: 1, maxTokens: 1, promptTokens: 2, timeoutMs: 10_000 });

describe("the load client and a kept-alive connection the server closes", () => {
  let srv: Server | undefined;
  afterEach(() => srv?.close());

  it("sends a request cut before any answer once more, on a connection of its own", async () => {
    const s = await server(false);
    srv = s.srv;
    const r = await oneAtATime(s.url, 4);
    expect(r.errorSamples).toEqual([]);
    expect(r.completed).toBe(4);
    // Requests 2 and 4 went out on a kept-alive connection, were cut and sent again (1, 2+1, 1, 2+1):
    // 6 reached the server.
    expect(s.seen()).toBe(6);
  });

  it("counts an answer that breaks off as an error: it is not sent again", async () => {
    const s = await server(true);
    srv = s.srv;
    const r = await oneAtATime(s.url, 2);
    expect(r.completed).toBe(1);
    expect(r.errors).toBe(1);
    expect(s.seen()).toBe(2);
  });
});
