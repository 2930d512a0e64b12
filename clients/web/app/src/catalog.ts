// The card catalog (Engine.ListCards), asked once per catalog fingerprint.
import type { EngineClient } from "./api";
import type { Card } from "./gen/ascension/v1/game_pb";

export class Catalog {
  readonly byId = new Map<number, Card>();
  readonly byKey = new Map<string, Card>();

  constructor(
    readonly fingerprint: string,
    cards: Card[],
  ) {
    for (const c of cards) {
      this.byId.set(c.id, c);
      this.byKey.set(c.key, c);
    }
  }

  get(id: number): Card | undefined {
    return this.byId.get(id);
  }

  name(id: number): string {
    return this.byId.get(id)?.name ?? (id < 0 ? "a face-down Treasure" : `card #${id}`);
  }
}

const loaded = new Map<string, Promise<Catalog>>();

export function loadCatalog(client: EngineClient, fingerprint: string): Promise<Catalog> {
  let p = loaded.get(fingerprint);
  if (!p) {
    p = client.listCards({}).then((r) => new Catalog(r.catalogFingerprint, r.cards));
    p.catch(() => loaded.delete(fingerprint));
    loaded.set(fingerprint, p);
  }
  return p;
}
