// The Ascension engine's gRPC API for Node.js programs: the stubs generated from proto/
// (src/gen, by buf with protoc-gen-es) and a client over HTTP/2 gRPC (Connect for ES).
//
//   import { engineClient } from "@ascension/engine-client";
//   const engine = engineClient("127.0.0.1:50051");
//   const game = await engine.createGame({ sets: "ss", seats: [...] });
import { Code, ConnectError, createClient, type CallOptions, type Client } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Engine, ReviewLabel } from "./gen/ascension/v1/engine_pb.js";

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

/** Whether a review shows "better: ..." for a decision: an inaccuracy or worse (a GOOD or BEST
 * move is as good as the best one, within what the search can tell). */
export function reviewShowsBetter(r: { label: number }): boolean {
  return r.label === ReviewLabel.INACCURACY || r.label === ReviewLabel.MISTAKE || r.label === ReviewLabel.BLUNDER;
}

/** A seat's accuracy for a game, 0..100, as docs/bots.md ("Game review") computes it: 100 per
 * BEST decision, else 100 * (1 - drop / 0.10), 0 from a drop of 0.10; the mean (null: none). */
export function reviewAccuracy(rs: { label: number; winProbability: number; bestWinProbability: number }[]): number | null {
  if (!rs.length) return null;
  let sum = 0;
  for (const r of rs) {
    const drop = Math.max(0, r.bestWinProbability - r.winProbability);
    sum += r.label === ReviewLabel.BEST ? 100 : 100 * Math.max(0, 1 - drop / 0.1);
  }
  return sum / rs.length;
}

/** A review's key moments, as docs/bots.md ("Game review") and the Python SDK's key_moments
 * choose them: the `n` decisions after which the seat's chance moved most against its previous
 * decision (the first against 0.5), either way; in game order. */
export function reviewKeyMoments<R extends { winProbability: number }>(rs: R[], n = 3): R[] {
  const swings = rs.map((r, i) => ({ i, swing: Math.abs(r.winProbability - (i > 0 ? rs[i - 1].winProbability : 0.5)) }));
  return swings
    .sort((a, b) => b.swing - a.swing || a.i - b.i)
    .slice(0, n)
    .sort((a, b) => a.i - b.i)
    .map((m) => rs[m.i]);
}
