// The Ascension engine's gRPC API for Node.js programs: the stubs generated from proto/
// (src/gen, by buf with protoc-gen-es) and a client over HTTP/2 gRPC (Connect for ES).
//
//   import { engineClient } from "@ascension/engine-client";
//   const engine = engineClient("127.0.0.1:50051");
//   const game = await engine.createGame({ sets: "ss", seats: [...] });
import { Code, ConnectError, createClient, type CallOptions, type Client } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Engine } from "./gen/ascension/v1/engine_pb.js";

export * from "./gen/ascension/v1/engine_pb.js";
export * from "./gen/ascension/v1/game_pb.js";
export { Code, ConnectError, type CallOptions };

export type EngineClient = Client<typeof Engine>;

/**
 * A client of the engine at `address` ("HOST:PORT", or a URL: "http://HOST:PORT" for
 * plaintext, "https://..." for TLS), speaking gRPC over HTTP/2.
 */
export function engineClient(address: string): EngineClient {
  const baseUrl = /^https?:\/\//.test(address) ? address : `http://${address}`;
  return createClient(Engine, createGrpcTransport({ baseUrl }));
}

/**
 * Milliseconds `seat` has left on a game's clocks (GameView.clock / GameUpdate.clock): counting
 * down for the seat whose clock runs (against this machine's time), standing still for the others.
 */
export function timeLeftMs(clock: { seat: number; deadlineUnixMs: bigint; bankMs: bigint[]; turnMs: bigint[] }, seat: number, nowMs: number = Date.now()): number {
  if (clock.seat === seat && clock.deadlineUnixMs > 0n) return Math.max(0, Number(clock.deadlineUnixMs) - nowMs);
  return seat < clock.bankMs.length ? Number(clock.turnMs[seat] + clock.bankMs[seat]) : 0;
}

/** The browser page's link that gives its holder the seat of `token` (in the fragment only). */
export function invitationLink(pageUrl: string, gameId: string, token: string): string {
  return `${pageUrl.split("#")[0]}#/join/${gameId}/${token}`;
}
