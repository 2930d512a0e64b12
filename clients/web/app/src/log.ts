// The game's updates in words: one entry per applied action, in the rules' own sentences, with
// seats called by their names ("You", "Seat 2 (heuristic)").
import type { GameEvent, GameUpdate, GameView } from "./gen/ascension/v1/game_pb";
import { roundOf, seatName } from "./names";

// Events the board already shows, or that say nothing a player wants to read.
const QUIET = new Set(["gain", "draw", "turn_end", "turn_start", "enter_center", "coin_placed", "ghost_moved", "reshuffle", "skip"]);

export interface Entry {
  version: bigint;
  seat: number; // the seat that acted, -1 for the table
  turnStart: string | null; // "Round 3: Seat 2 (random) to play" when this update began a turn
  lines: string[];
}

function data(e: GameEvent): unknown[] {
  try {
    const v: unknown = JSON.parse(e.data);
    return Array.isArray(v) ? v : [];
  } catch {
    return [];
  }
}

/** "Seat 1 played Militia" -> "You played Militia"; "Seat 2's ship" -> "Seat 2 (random)'s ship". */
export function named(text: string, view: GameView, me: number): string {
  return text.replace(
    /\b[Ss]eat (\d)\b('s)?( \w+ their\b)?/g,
    (_m: string, n: string, poss: string | undefined, their: string | undefined, at: number) => {
      const seat = Number(n) - 1;
      const first = at === 0 || /[.:;!?] $/.test(text.slice(0, at));
      if (seat !== me || me < 0) return (poss ? `${seatName(view, seat, me)}'s` : seatName(view, seat, me)) + (their ?? "");
      const you = poss ? "Your" : "You";
      return (first ? you : you.toLowerCase()) + (their ? their.replace(/their$/, "your") : "");
    },
  );
}

// What a move is (a card played, acquired, defeated...) comes first in its entry, then what
// followed from it: the rules report a refill and the Treasure taken before the defeat.
const MAIN = new Set(["play", "use", "acquire", "defeat", "banish", "ship", "coins_flipped", "raid", "tribute"]);

export function entryOf(u: GameUpdate, view: GameView, me: number): Entry {
  const shown = u.events.filter((e) => !QUIET.has(e.kind) && e.text);
  const first = shown.findIndex((e) => MAIN.has(e.kind));
  const ordered = first > 0 ? [shown[first], ...shown.slice(0, first), ...shown.slice(first + 1)] : shown;
  const lines = ordered.map((e) => named(e.text, view, me));
  if (!lines.length) {
    const ended = u.events.find((e) => e.kind === "turn_end");
    if (ended) lines.push(named(ended.text, view, me));
    else if (u.version === 1n) lines.push("The game was dealt.");
    else lines.push(`${seatName(view, u.seat, me)}: ${u.description}`);
  }
  let turnStart: string | null = null;
  const start = u.events.find((e) => e.kind === "turn_start");
  if (start) {
    const [, seat, turn] = data(start);
    turnStart =
      typeof seat === "number" && typeof turn === "number"
        ? seat === me
          ? `Round ${roundOf(view, turn)}: your turn`
          : `Round ${roundOf(view, turn)}: ${seatName(view, seat, me)} to play`
        : start.text;
  }
  return { version: u.version, seat: u.seat, turnStart, lines };
}
