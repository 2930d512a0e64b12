// Words and short labels, in the rulebooks' terms (as the terminal client says them).
import type { Card, GameView } from "./gen/ascension/v1/game_pb";
import { SeatInfo_Kind } from "./gen/ascension/v1/game_pb";

export const DEEP = 6;
export const PILE_KEYS: Record<number, string> = { 7: "mystic", 8: "heavy_infantry", 9: "cultist" };
export const SET_NAMES: Record<string, string> = {
  ss: "Skulls & Sails",
  cotgi: "Curse of the Golden Isles",
  both: "Skulls & Sails + Curse of the Golden Isles",
};
export const TYPE_NAMES: Record<string, string> = {
  hero: "Hero",
  construct: "Construct",
  monster: "Monster",
  treasure: "Treasure",
};
export const RESOURCE_NAMES: Record<string, string> = {
  runes: "Runes",
  power: "Power",
  crew: "Crew",
  honor: "Honor",
  draw: "Draw",
  move: "Move",
};

export function spaceLabel(space: number): string {
  return space === DEEP ? "The Deep" : `Space ${space + 1}`;
}

/** "You", or the seat's display name with its bot and level: "Seat 2 (ismcts, Hard)". */
export function seatName(view: GameView, seat: number, me: number): string {
  if (seat === me && seat >= 0) return "You";
  if (seat < 0) return "The table";
  const info = view.seatInfo.find((s) => s.seat === seat);
  let name = info?.name ? info.name : `Seat ${seat + 1}`;
  if (info && info.kind === SeatInfo_Kind.AI) {
    const level = info.difficulty ? info.difficulty[0].toUpperCase() + info.difficulty.slice(1) : "";
    const said = [info.botName, level].filter((x) => x && !name.toLowerCase().includes(x.toLowerCase()));
    if (said.length) name = `${name} (${said.join(", ")})`;
  }
  return name;
}

export function isBot(view: GameView, seat: number): boolean {
  return view.seatInfo.find((s) => s.seat === seat)?.kind === SeatInfo_Kind.AI;
}

/** Short cost: "3R" (Runes to acquire) or "4P" (Power to defeat); "" for starting cards. */
export function costShort(card: Card): string {
  if (card.cost <= 0) return "";
  if (card.type === "monster") return `${card.cost}P`;
  if (card.type === "hero" || card.type === "construct") return `${card.cost}R`;
  return "";
}

export function costWords(card: Card): string {
  if (card.cost <= 0) return "";
  if (card.type === "monster") return `defeat for ${card.cost} Power`;
  if (card.type === "hero" || card.type === "construct") return `costs ${card.cost} Runes`;
  return "";
}

/** Everything a screen reader should say about a card. */
export function cardWords(card: Card, count = 1): string {
  const parts = [count > 1 ? `${card.name} ×${count}` : card.name, TYPE_NAMES[card.type] ?? card.type];
  if (card.faction && card.faction !== "none") parts.push(card.faction);
  const cost = costWords(card);
  if (cost) parts.push(cost);
  if (card.honor && card.type !== "monster") parts.push(`${card.honor} Honor`);
  if (card.text) parts.push(card.text);
  return parts.join(", ");
}

/** The round a turn is in: the rules count every seat's turn, a round is one turn each. */
export function roundOf(view: GameView, turn: number): number {
  return Math.floor((Math.max(turn, 1) - 1) / Math.max(view.players, 1)) + 1;
}

export function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}
