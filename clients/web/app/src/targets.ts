// Where on the table a legal action points, so that it can be offered on that card or space.
//
// Only the server lists actions (the client never decides what is legal): this maps each
// listed action to the card or space it names, from its stable id (kind << 16 | argument,
// see proto/ascension/v1/game.proto LegalAction.id). An action it cannot place is still
// offered in the list of actions, which always holds every one of them.
import type { LegalAction } from "./gen/ascension/v1/game_pb";
import { PILE_KEYS } from "./names";

export type Zone = "hand" | "construct" | "space" | "pile" | "void";
export interface Target {
  zone: Zone;
  key: number | string; // card id, space index, or pile card key
}

const HAND_CARD = new Set(["play", "banish_hand", "prevent_raid"]);
const SPACE_OR_PILE = new Set(["acquire", "defeat", "take_free"]);
const SPACE = new Set(["acquire_crew", "defeat_crew", "banish_center", "move", "move_ship", "place_ship"]);

export function targetOf(a: LegalAction): Target | null {
  const arg = a.id & 0xffff;
  if (HAND_CARD.has(a.kind)) return { zone: "hand", key: arg };
  if (a.kind === "use") return { zone: "construct", key: Math.floor(arg / 8) };
  if (a.kind === "destroy") return { zone: "construct", key: arg };
  if (a.kind === "defeat_void") return { zone: "void", key: arg };
  if (SPACE.has(a.kind) && arg <= 6) return { zone: "space", key: arg };
  if (SPACE_OR_PILE.has(a.kind)) {
    if (arg <= 6) return { zone: "space", key: arg };
    const pile = PILE_KEYS[arg];
    return pile ? { zone: "pile", key: pile } : null;
  }
  return null;
}

const VERBS: Record<string, string> = {
  play: "Play",
  banish_hand: "Banish",
  prevent_raid: "Reveal",
  use: "Use",
  destroy: "Destroy",
  defeat_void: "Defeat",
  acquire: "Acquire",
  acquire_crew: "Acquire (Crew)",
  defeat: "Defeat",
  defeat_crew: "Defeat (Crew)",
  take_free: "Take free",
  banish_center: "Banish",
  move: "Move here",
  move_ship: "Move here",
  place_ship: "Place ship",
};

export function verbOf(a: LegalAction): string {
  return VERBS[a.kind] ?? a.description;
}

/** The listed actions grouped by what they point at ("zone:key" -> actions). */
export function byTarget(actions: readonly LegalAction[]): Map<string, LegalAction[]> {
  const out = new Map<string, LegalAction[]>();
  for (const a of actions) {
    const t = targetOf(a);
    if (!t) continue;
    const k = `${t.zone}:${t.key}`;
    const list = out.get(k);
    if (list) list.push(a);
    else out.set(k, [a]);
  }
  return out;
}
