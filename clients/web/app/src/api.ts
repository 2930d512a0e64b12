// The Engine client: stubs generated from proto/ (src/gen), over Connect or gRPC-Web.
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";
import { Engine } from "./gen/ascension/v1/engine_pb";

export type EngineClient = Client<typeof Engine>;
export type Protocol = "connect" | "grpc-web";

/** The API is served by the page's own origin, under the page's path (a gateway may mount it). */
export function apiBase(): string {
  return new URL(".", location.href).href.replace(/\/$/, "");
}

export function engineClient(protocol: Protocol): EngineClient {
  const baseUrl = apiBase();
  const transport =
    protocol === "grpc-web"
      ? createGrpcWebTransport({ baseUrl, useBinaryFormat: true })
      : createConnectTransport({ baseUrl, useBinaryFormat: true });
  return createClient(Engine, transport);
}

/** The engine's own words for an error (its message names the field or gives the rules' reason). */
export function errorText(e: unknown): string {
  if (e instanceof ConnectError) {
    const what = Code[e.code] ?? "error";
    return `${e.rawMessage || what} (${what.replace(/([a-z])([A-Z])/g, "$1 $2").toLowerCase()})`;
  }
  return e instanceof Error ? e.message : String(e);
}

export function isCode(e: unknown, ...codes: Code[]): boolean {
  return e instanceof ConnectError && codes.includes(e.code);
}

export { Code };
