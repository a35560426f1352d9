import { Console } from "node:console";
import { Writable } from "node:stream";
import { formatWithOptions, inspect } from "node:util";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { JoinCodeError, StratumError } from "../../src/errors/index.js";
import { CROCKFORD_ALPHABET, encodeBase32Bits } from "../../src/core/base32.js";
import {
  computeCheckSymbol,
  formatJoinCode,
  generateJoinCode,
  isJoinCode,
  parseJoinCode,
} from "../../src/core/join-code.js";

const SEED = "4F7K-2Q9M-ABD";

/** An independent Luhn mod 32 check, written from the textbook definition (validation: factor 1 on the check symbol). */
function luhnValid(code: string): boolean {
  let sum = 0;
  for (let i = 0; i < code.length; i++) {
    const fromRight = code.length - 1 - i;
    let v = CROCKFORD_ALPHABET.indexOf(code[i]!);
    if (fromRight % 2 === 1) {
      v *= 2;
      v = Math.floor(v / 32) + (v % 32);
    }
    sum += v;
  }
  return sum % 32 === 0;
}

function caught(fn: () => unknown): JoinCodeError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(JoinCodeError);
    return error as JoinCodeError;
  }
  throw new Error("expected a JoinCodeError");
}

const symbol = fc.constantFrom(...CROCKFORD_ALPHABET);
const data10 = fc.array(symbol, { minLength: 10, maxLength: 10 }).map((s) => s.join(""));
const validCode = data10.map((d) => d + computeCheckSymbol(d));

describe("the seed example", () => {
  it("4F7K-2Q9M-ABD is valid", () => {
    expect(luhnValid("4F7K2Q9MABD")).toBe(true);
    expect(computeCheckSymbol("4F7K2Q9MAB")).toBe("D");
    expect(parseJoinCode(SEED)).toEqual({ code: "4F7K2Q9MABD", formatted: SEED, selector: "4F" });
    expect(isJoinCode(SEED)).toBe(true);
    expect(formatJoinCode("4f7k2q9mabd")).toBe(SEED);
  });

  it("a changed check symbol is refused", () => {
    const e = caught(() => parseJoinCode("4F7K-2Q9M-ABC"));
    expect(e.reason).toBe("check");
    expect(e.code).toBe("JOIN_CODE_MALFORMED");
    expect(StratumError.is(e)).toBe(true);
  });
});

describe("generateJoinCode", () => {
  it("every generated code parses back to itself", () => {
    for (let i = 0; i < 2000; i++) {
      const g = generateJoinCode();
      expect(g.code).toMatch(/^[0-9A-HJKMNP-TV-Z]{11}$/);
      expect(luhnValid(g.code)).toBe(true);
      expect(parseJoinCode(g.formatted)).toEqual(g);
      expect(g.selector).toBe(g.code.slice(0, 2));
    }
  });

  it("draws every symbol at every position (no stuck bits)", () => {
    const seen = Array.from({ length: 10 }, () => new Set<string>());
    for (let i = 0; i < 3000; i++) {
      const { code } = generateJoinCode();
      for (let p = 0; p < 10; p++) seen[p]!.add(code[p]!);
    }
    for (const s of seen) expect(s.size).toBe(32);
  });

  it("maps 5-bit groups to symbols, most significant bit first", () => {
    // 0b00001 00010 00011 ... : bytes 08 86 42 98 e8 (40 bits = 8 symbols)
    expect(encodeBase32Bits(Uint8Array.of(0x08, 0x86, 0x42, 0x98, 0xe8), 8)).toBe("12345678");
    expect(encodeBase32Bits(new Uint8Array(7).fill(0xff), 10)).toBe("ZZZZZZZZZZ");
    expect(() => encodeBase32Bits(new Uint8Array(6), 10)).toThrow(RangeError);
  });
});

describe("error detection", () => {
  it("every single-symbol substitution is caught", () => {
    fc.assert(
      fc.property(validCode, fc.integer({ min: 0, max: 10 }), fc.integer({ min: 1, max: 31 }), (code, at, shift) => {
        const v = (CROCKFORD_ALPHABET.indexOf(code[at]!) + shift) % 32;
        const typo = code.slice(0, at) + CROCKFORD_ALPHABET[v] + code.slice(at + 1);
        expect(caught(() => parseJoinCode(typo)).reason).toBe("check");
      }),
      { numRuns: 3000 },
    );
  });

  it("every substitution of the seed, exhaustively", () => {
    const seed = "4F7K2Q9MABD";
    for (let at = 0; at < 11; at++) {
      for (const s of CROCKFORD_ALPHABET) {
        if (s === seed[at]) continue;
        expect(isJoinCode(seed.slice(0, at) + s + seed.slice(at + 1))).toBe(false);
      }
    }
  });

  it("every adjacent swap is caught except 0Z / Z0", () => {
    fc.assert(
      fc.property(validCode, fc.integer({ min: 0, max: 9 }), (code, at) => {
        const a = code[at]!;
        const b = code[at + 1]!;
        fc.pre(a !== b);
        const swapped = code.slice(0, at) + b + a + code.slice(at + 2);
        const zeroZ = (a === "0" && b === "Z") || (a === "Z" && b === "0");
        expect(isJoinCode(swapped)).toBe(zeroZ);
      }),
      { numRuns: 5000 },
    );
  });

  it("0Z / Z0 swaps are indeed invisible (the known blind spot)", () => {
    const data = "0Z00000000";
    const code = data + computeCheckSymbol(data);
    expect(isJoinCode("Z0" + code.slice(2))).toBe(true);
  });

  it("suggests the swap back when exactly one adjacent swap makes the code valid", () => {
    fc.assert(
      fc.property(validCode, fc.integer({ min: 0, max: 9 }), (code, at) => {
        const a = code[at]!;
        const b = code[at + 1]!;
        fc.pre(a !== b && !((a === "0" && b === "Z") || (a === "Z" && b === "0")));
        const swapped = code.slice(0, at) + b + a + code.slice(at + 2);
        const e = caught(() => parseJoinCode(swapped));
        expect(e.reason).toBe("check");
        // Count independently how many adjacent swaps of the typo are valid.
        const fixes = new Set<string>();
        for (let i = 0; i < 10; i++) {
          const c = swapped.slice(0, i) + swapped[i + 1] + swapped[i] + swapped.slice(i + 2);
          if (c !== swapped && luhnValid(c)) fixes.add(c);
        }
        expect(fixes.has(code)).toBe(true);
        if (fixes.size === 1) {
          const display = `${code.slice(0, 4)}-${code.slice(4, 8)}-${code.slice(8)}`;
          expect(e.suggestion).toBe(display);
          expect(e.message).toContain("two adjacent symbols look swapped");
        } else {
          expect(e.suggestion).toBeUndefined();
        }
        // Neither the code typed nor the one suggested, in any form.
        for (const form of [code, swapped, `${code.slice(0, 4)}-${code.slice(4, 8)}`]) {
          expect(e.message).not.toContain(form);
        }
      }),
      { numRuns: 3000 },
    );
  });

  it("suggests the seed for its swapped form", () => {
    const e = caught(() => parseJoinCode("F47K-2Q9M-ABD"));
    expect(e.reason).toBe("check");
    expect(e.suggestion).toBe(SEED);
    expect(e.message).toBe("the join code's check symbol does not match: two adjacent symbols look swapped");
  });

  it("keeps the suggestion out of the message, JSON, util.inspect and console output", () => {
    const e = caught(() => parseJoinCode("F47K-2Q9M-ABD"));
    expect(e.suggestion).toBe(SEED);
    const forms = ["4F7K", "F47K", "2Q9M", "4F7K2Q9MABD", "F47K2Q9MABD"];
    const json = JSON.stringify(e);
    expect(JSON.parse(json)).toMatchObject({ code: "JOIN_CODE_MALFORMED", reason: "check" });
    expect(JSON.parse(json)).not.toHaveProperty("suggestion");
    const shown = [
      e.message,
      json,
      String(e),
      e.stack ?? "",
      inspect(e),
      inspect(e, { showHidden: true, depth: 5, getters: true }),
      inspect({ error: e }, { depth: 5 }),
      formatWithOptions({ colors: false }, "%o", e),
    ];
    // What console.log and console.error print, captured from a Console of our own.
    let out = "";
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        out += chunk.toString();
        done();
      },
    });
    const console = new Console({ stdout: sink, stderr: sink });
    console.log(e);
    console.error("failed:", e);
    console.dir(e, { showHidden: true });
    console.log("%j", e);
    shown.push(out);
    expect(out).toContain("JoinCodeError");
    for (const text of shown) for (const form of forms) expect(text).not.toContain(form);
    expect(Object.keys(e)).not.toContain("suggestion");
    expect(Object.getOwnPropertyNames(e)).not.toContain("suggestion");
    // Structured clone (workers, postMessage) carries no property of the error but its message.
    expect(JSON.stringify(Object.entries(structuredClone(e)))).not.toContain("4F7K");
  });

  it("never repeats the code in a message without a suggestion", () => {
    fc.assert(
      fc.property(validCode, fc.integer({ min: 0, max: 10 }), fc.integer({ min: 1, max: 31 }), (code, at, shift) => {
        const v = (CROCKFORD_ALPHABET.indexOf(code[at]!) + shift) % 32;
        const typo = code.slice(0, at) + CROCKFORD_ALPHABET[v] + code.slice(at + 1);
        const e = caught(() => parseJoinCode(typo));
        for (const form of [typo, code, `${typo.slice(0, 4)}-${typo.slice(4, 8)}-${typo.slice(8)}`]) {
          if (e.suggestion === undefined) expect(e.message).not.toContain(form.slice(0, 8));
        }
        expect(e.message).not.toContain(typo);
      }),
      { numRuns: 1000 },
    );
  });
});

describe("normalisation", () => {
  /** Re-types a canonical code the way a person might: any case, O for 0, I/L for 1, separators anywhere. */
  const retyped = (code: string) =>
    fc
      .tuple(
        ...[...code].map((c) =>
          fc.tuple(
            c === "0"
              ? fc.constantFrom("0", "O", "o")
              : c === "1"
                ? fc.constantFrom("1", "I", "i", "L", "l")
                : fc.constantFrom(c, c.toLowerCase()),
            fc.constantFrom("", "", "", "-", " ", "  ", "\t", "\u2013", "\u00a0"),
          ),
        ),
      )
      .chain((parts) =>
        fc.constantFrom("", " ", "\n", "-").map((lead) => lead + parts.map(([s, sep]) => s + sep).join("")),
      );

  it("case, dashes, white space and O/I/L do not change the code", () => {
    fc.assert(
      fc.property(
        validCode.chain((code) => retyped(code).map((typed) => ({ code, typed }))),
        ({ code, typed }) => {
          expect(parseJoinCode(typed).code).toBe(code);
        },
      ),
      { numRuns: 3000 },
    );
  });

  it("reads o, i and l in a fixed example", () => {
    const data = "10L0IOABCD".replace(/[LI]/g, "1").replace(/O/g, "0");
    const code = data + computeCheckSymbol(data);
    expect(parseJoinCode(`10l0-io${code.slice(6, 8).toLowerCase()}-${code.slice(8)}`).code).toBe(code);
  });
});

describe("refusals", () => {
  it("empty input", () => {
    for (const input of ["", "   ", "--", " - \t"]) {
      const e = caught(() => parseJoinCode(input));
      expect(e.reason).toBe("empty");
    }
  });

  it("wrong length", () => {
    for (const input of ["4F7K-2Q9M-AB", "4F7K-2Q9M-ABDD", "4"]) {
      const e = caught(() => parseJoinCode(input));
      expect(e.reason).toBe("length");
      expect(e.message).not.toContain("4F7K");
    }
  });

  it("U and other characters, with their position in the original input", () => {
    const cases: Array<[string, number, string]> = [
      ["4F7K-2Q9M-ABU", 13, "U"],
      ["u", 1, "u"],
      [" 4F7K 2Q9M_ABD", 11, "_"],
      ["4F7K-2Q9M-AB.D", 13, "."],
      ["4F7K-2Q9M-ABÐ", 13, "Ð"],
      ["4F7K-\u{1F600}2Q9M", 6, "\u{1F600}"],
      ["4\u{1F600}F7K-2Q9M-ABX", 2, "\u{1F600}"],
      ["ıF7K-2Q9M-ABD", 1, "ı"], // dotless i is not I
    ];
    for (const [input, position, character] of cases) {
      const e = caught(() => parseJoinCode(input));
      expect(e.reason, input).toBe("character");
      expect(e.position, input).toBe(position);
      expect(e.character, input).toBe(character);
      expect(e.message).toContain(`position ${position}`);
      expect(e.message).not.toContain("2Q9M");
    }
  });

  it("a character error's position points at the character, as a property", () => {
    fc.assert(
      fc.property(
        validCode,
        fc.integer({ min: 0, max: 11 }),
        fc.constantFrom("U", "u", "!", "*", "_", "Ä", "#"),
        (code, at, bad) => {
          const display = `${code.slice(0, 4)}-${code.slice(4, 8)}-${code.slice(8)}`;
          const input = display.slice(0, at) + bad + display.slice(at);
          const e = caught(() => parseJoinCode(input));
          expect(e.reason).toBe("character");
          expect(e.position).toBe(at + 1);
          expect([...input][e.position! - 1]).toBe(bad);
        },
      ),
    );
  });

  it("computeCheckSymbol wants 10 canonical symbols", () => {
    expect(caught(() => computeCheckSymbol("4F7K2Q9MA")).reason).toBe("length");
    expect(caught(() => computeCheckSymbol("4f7K2Q9MAB")).reason).toBe("character");
    expect(caught(() => computeCheckSymbol("4F7K2Q9MAU")).position).toBe(10);
  });

  it("formatJoinCode throws like parseJoinCode", () => {
    expect(caught(() => formatJoinCode("4F7K-2Q9M-ABC")).reason).toBe("check");
    expect(caught(() => formatJoinCode("")).reason).toBe("empty");
  });
});

describe("every refusal says what is wrong, without the code", () => {
  it("a missing code (nothing, or not a string) is `empty`", () => {
    for (const input of [undefined, null, 12345, ["4F7K2Q9MABD"]]) {
      const e = caught(() => parseJoinCode(input as unknown as string));
      expect(e.reason).toBe("empty");
      expect(e.message).toBe("no join code was given");
      expect(isJoinCode(input as unknown as string)).toBe(false);
    }
    expect(caught(() => parseJoinCode(" - ")).message).toBe("no join code was given");
  });

  it("a wrong length says how many symbols a code has and how many were typed", () => {
    expect(caught(() => parseJoinCode("4F7K-2Q9M-ABDD")).message).toBe(
      "a join code has 11 symbols (XXXX-XXXX-XXX), this one has 12",
    );
  });

  it("a wrong check symbol with no single swap to blame says a symbol is mistyped", () => {
    const e = caught(() => parseJoinCode("4F7K-2Q9M-AB0"));
    expect(e.suggestion).toBeUndefined();
    expect(e.message).toBe("the join code's check symbol does not match: a symbol is mistyped");
  });

  it("computeCheckSymbol names the character and the length it refuses", () => {
    expect(caught(() => computeCheckSymbol("4F7K2Q9MA")).message).toBe("a join code's data is 10 symbols, not 9");
    expect(caught(() => computeCheckSymbol("4F7K2Q9MAU")).message).toMatch(
      /^the character "U" \(U\+0055\) at position 10 is not a canonical join-code symbol \(upper-case Crockford base32\)$/,
    );
  });
});
