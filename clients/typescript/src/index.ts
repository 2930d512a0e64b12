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
