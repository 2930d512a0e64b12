// The game's updates in words: one entry per applied action, in the rules' own sentences, with
// seats called by their names ("You", "Seat 2 (heuristic)").
import type { GameEvent, GameUpdate, GameView } from "./gen/ascension/v1/game_pb";
import { seatName } from "./names";

// Events the board already shows, or that say nothing a player wants to read.
const QUIET = new Set(["gain", "draw", "turn_end", "turn_start", "enter_center", "coin_placed", "ghost_moved", "reshuffle", "skip"]);

export interface Entry {
  version: bigint;
  seat: number; // the seat that acted, -1 for the table
  turnStart: string | null; // "Turn 5: Seat 2 (random) to play" when this update began a turn
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

export function entryOf(u: GameUpdate, view: GameView, me: number): Entry {
  const lines = u.events.filter((e) => !QUIET.has(e.kind) && e.text).map((e) => named(e.text, view, me));
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
          ? `Turn ${turn}: your turn`
          : `Turn ${turn}: ${seatName(view, seat, me)} to play`
        : start.text;
  }
  return { version: u.version, seat: u.seat, turnStart, lines };
}
