import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { testSeed } from '../../sim/testkit/test-seed.ts';
import type { MaintenanceWindow } from '../api/windows-node-pool.ts';
import { errorCode } from '../errors/catalog.ts';
import {
  currentWindow,
  isInWindow,
  nextWindowStart,
  parseMaintenanceWindow,
  parseTimeZone,
  zonedInstant,
} from './maintenance-window.ts';

const at = (iso: string) => new Date(iso);

// The example: weekend nights, 01:00–05:00 UTC. 2025-06-07 is a Saturday.
const weekendNights: MaintenanceWindow = {
  days: ['Sat', 'Sun'],
  start: '01:00',
  end: '05:00',
  timeZone: 'UTC',
};

test('a window on listed days, start inclusive and end exclusive', () => {
  assert.equal(isInWindow(weekendNights, at('2025-06-07T00:59:59Z')), false);
  assert.equal(isInWindow(weekendNights, at('2025-06-07T01:00:00Z')), true);
  assert.equal(isInWindow(weekendNights, at('2025-06-07T04:59:59.999Z')), true);
  assert.equal(isInWindow(weekendNights, at('2025-06-07T05:00:00Z')), false);
  assert.equal(isInWindow(weekendNights, at('2025-06-08T03:00:00Z')), true, 'Sunday');
  assert.equal(isInWindow(weekendNights, at('2025-06-09T03:00:00Z')), false, 'Monday');
  assert.deepEqual(currentWindow(weekendNights, at('2025-06-08T03:00:00Z')), {
    start: at('2025-06-08T01:00:00Z'),
    end: at('2025-06-08T05:00:00Z'),
  });
});

test('no days means every day; timeZone defaults to UTC', () => {
  const nightly = { start: '01:00', end: '02:00' };
  for (const day of ['09', '10', '11', '12', '13', '14', '15']) {
    assert.equal(isInWindow(nightly, at(`2025-06-${day}T01:30:00Z`)), true, day);
    assert.equal(isInWindow(nightly, at(`2025-06-${day}T02:30:00Z`)), false, day);
  }
});

test('a window crossing midnight belongs to the day it starts on', () => {
  const saturdayNight: MaintenanceWindow = { days: ['Sat'], start: '22:00', end: '02:00' };
  assert.equal(isInWindow(saturdayNight, at('2025-06-07T21:59:00Z')), false, 'Sat 21:59');
  assert.equal(isInWindow(saturdayNight, at('2025-06-07T22:00:00Z')), true, 'Sat 22:00');
  assert.equal(isInWindow(saturdayNight, at('2025-06-08T01:59:00Z')), true, 'Sun 01:59');
  assert.equal(isInWindow(saturdayNight, at('2025-06-08T02:00:00Z')), false, 'Sun 02:00');
  assert.equal(isInWindow(saturdayNight, at('2025-06-08T23:00:00Z')), false, 'Sun 23:00');
  assert.equal(
    isInWindow(saturdayNight, at('2025-06-07T01:00:00Z')),
    false,
    'Sat 01:00: Fri night',
  );
  assert.deepEqual(
    nextWindowStart(saturdayNight, at('2025-06-08T01:00:00Z')),
    at('2025-06-14T22:00:00Z'),
  );
});

test('"24:00" ends the window at midnight: a whole day', () => {
  const sunday: MaintenanceWindow = { days: ['Sun'], start: '00:00', end: '24:00' };
  assert.equal(isInWindow(sunday, at('2025-06-08T00:00:00Z')), true);
  assert.equal(isInWindow(sunday, at('2025-06-08T23:59:59Z')), true);
  assert.equal(isInWindow(sunday, at('2025-06-09T00:00:00Z')), false);
  assert.equal(isInWindow(sunday, at('2025-06-07T23:59:59Z')), false);
});

test('the window is read in its time zone', () => {
  const berlin: MaintenanceWindow = {
    days: ['Sat'],
    start: '01:00',
    end: '05:00',
    timeZone: 'Europe/Berlin',
  };
  // Summer: Berlin is UTC+2, so Saturday 01:00 Berlin is Friday 23:00 UTC.
  assert.equal(isInWindow(berlin, at('2025-06-06T23:00:00Z')), true);
  assert.equal(isInWindow(berlin, at('2025-06-07T02:59:00Z')), true);
  assert.equal(isInWindow(berlin, at('2025-06-07T03:00:00Z')), false);
  const kolkata: MaintenanceWindow = { start: '02:00', end: '03:00', timeZone: 'Asia/Kolkata' };
  assert.equal(isInWindow(kolkata, at('2025-06-07T20:30:00Z')), true, '02:00 IST is 20:30 UTC');
  assert.equal(isInWindow(kolkata, at('2025-06-07T20:29:00Z')), false);
  const newYork: MaintenanceWindow = {
    days: ['Mon'],
    start: '22:00',
    end: '23:00',
    timeZone: 'America/New_York',
  };
  // Monday 22:00 EDT is Tuesday 02:00 UTC.
  assert.equal(isInWindow(newYork, at('2025-06-10T02:30:00Z')), true);
  assert.deepEqual(
    nextWindowStart(newYork, at('2025-06-10T02:30:00Z')),
    at('2025-06-17T02:00:00Z'),
  );
});

test('Europe/Berlin, clocks forward (2025-03-30 02:00 CET → 03:00 CEST): the window is an hour shorter', () => {
  const sundayEarly: MaintenanceWindow = {
    days: ['Sun'],
    start: '01:00',
    end: '05:00',
    timeZone: 'Europe/Berlin',
  };
  assert.deepEqual(currentWindow(sundayEarly, at('2025-03-30T01:00:00Z')), {
    start: at('2025-03-30T00:00:00Z'), // 01:00 CET
    end: at('2025-03-30T03:00:00Z'), // 05:00 CEST: three real hours
  });
  assert.equal(isInWindow(sundayEarly, at('2025-03-29T23:59:59Z')), false);
  assert.equal(isInWindow(sundayEarly, at('2025-03-30T03:00:00Z')), false);
  // A start inside the skipped hour moves forward by the gap: 02:30 → 03:30 CEST.
  const fromSkipped: MaintenanceWindow = {
    days: ['Sun'],
    start: '02:30',
    end: '04:00',
    timeZone: 'Europe/Berlin',
  };
  assert.deepEqual(
    nextWindowStart(fromSkipped, at('2025-03-29T12:00:00Z')),
    at('2025-03-30T01:30:00Z'),
  );
  // A window wholly inside the skipped hour moves forward by the gap: 03:15 to 03:45 CEST.
  const skipped: MaintenanceWindow = {
    days: ['Sun'],
    start: '02:15',
    end: '02:45',
    timeZone: 'Europe/Berlin',
  };
  assert.deepEqual(currentWindow(skipped, at('2025-03-30T01:20:00Z')), {
    start: at('2025-03-30T01:15:00Z'),
    end: at('2025-03-30T01:45:00Z'),
  });
  // One that starts in the gap and ends after it, earlier than its moved start, is empty that
  // night (02:30 → 03:30 CEST is after 03:00 CEST); the next Sunday it opens.
  const empty: MaintenanceWindow = {
    days: ['Sun'],
    start: '02:30',
    end: '03:00',
    timeZone: 'Europe/Berlin',
  };
  for (const iso of ['2025-03-30T00:45:00Z', '2025-03-30T01:00:00Z', '2025-03-30T01:40:00Z']) {
    assert.equal(isInWindow(empty, at(iso)), false, iso);
  }
  assert.deepEqual(nextWindowStart(empty, at('2025-03-29T12:00:00Z')), at('2025-04-06T00:30:00Z'));
  // Saturday night across the change: 22:00 CET to 04:00 CEST is five real hours.
  const overnight: MaintenanceWindow = {
    days: ['Sat'],
    start: '22:00',
    end: '04:00',
    timeZone: 'Europe/Berlin',
  };
  assert.deepEqual(currentWindow(overnight, at('2025-03-30T01:00:00Z')), {
    start: at('2025-03-29T21:00:00Z'),
    end: at('2025-03-30T02:00:00Z'),
  });
});

test('Europe/Berlin, clocks back (2025-10-26 03:00 CEST → 02:00 CET): the window is an hour longer', () => {
  const repeated: MaintenanceWindow = {
    days: ['Sun'],
    start: '02:00',
    end: '03:00',
    timeZone: 'Europe/Berlin',
  };
  // 02:00 happens twice; the window opens at the first and closes at 03:00 CET.
  assert.deepEqual(currentWindow(repeated, at('2025-10-26T01:30:00Z')), {
    start: at('2025-10-26T00:00:00Z'),
    end: at('2025-10-26T02:00:00Z'),
  });
  assert.equal(isInWindow(repeated, at('2025-10-25T23:59:59Z')), false);
  assert.equal(isInWindow(repeated, at('2025-10-26T00:30:00Z')), true, '02:30 CEST');
  assert.equal(isInWindow(repeated, at('2025-10-26T01:30:00Z')), true, '02:30 CET');
  assert.equal(isInWindow(repeated, at('2025-10-26T02:00:00Z')), false);
  assert.deepEqual(
    nextWindowStart(repeated, at('2025-10-26T00:30:00Z')),
    at('2025-11-02T01:00:00Z'),
  );
});

test('zonedInstant: a repeated local time is its first occurrence, also for half-hour shifts', () => {
  // Lord Howe Island goes back 30 minutes at 02:00 (+11:00 → +10:30) on 2025-04-06.
  assert.equal(
    zonedInstant({ year: 2025, month: 4, day: 6 }, 1 * 60 + 45, 'Australia/Lord_Howe'),
    Date.parse('2025-04-05T14:45:00Z'),
  );
  assert.equal(
    zonedInstant({ year: 2025, month: 4, day: 6 }, 2 * 60 + 15, 'Australia/Lord_Howe'),
    Date.parse('2025-04-05T15:45:00Z'),
  );
  assert.equal(
    zonedInstant({ year: 2025, month: 6, day: 30 }, 1440, 'UTC'),
    Date.parse('2025-07-01T00:00:00Z'),
    '24:00 rolls into the next month',
  );
});

const zones = [
  'UTC',
  'Europe/Berlin',
  'America/New_York',
  'America/Santiago',
  'Asia/Kolkata',
  'Australia/Lord_Howe',
  'Pacific/Chatham',
  'Pacific/Apia',
];

test('zonedInstant inverts local time: same local time, never later than the instant', (t) => {
  const parts = new Map<string, Intl.DateTimeFormat>();
  const localOf = (ms: number, zone: string) => {
    let f = parts.get(zone);
    if (!f) {
      f = new Intl.DateTimeFormat('en-CA', {
        timeZone: zone,
        hourCycle: 'h23',
        year: 'numeric',
        month: '2-digit',
        day: '2-digit',
        hour: '2-digit',
        minute: '2-digit',
      });
      parts.set(zone, f);
    }
    const p = Object.fromEntries(f.formatToParts(ms).map((x) => [x.type, Number(x.value)]));
    return {
      date: { year: p.year!, month: p.month!, day: p.day! },
      minute: p.hour! * 60 + p.minute!,
    };
  };
  fc.assert(
    fc.property(
      fc.integer({
        min: Date.parse('2000-01-01T00:00:00Z') / 60_000,
        max: Date.parse('2037-12-31T00:00:00Z') / 60_000,
      }),
      fc.constantFrom(...zones),
      (minuteOfEpoch, zone) => {
        const instant = minuteOfEpoch * 60_000;
        const local = localOf(instant, zone);
        const back = zonedInstant(local.date, local.minute, zone);
        assert.deepEqual(localOf(back, zone), local);
        assert.ok(back <= instant, 'the first occurrence of a repeated time');
      },
    ),
    { seed: testSeed(t), numRuns: 2000 },
  );
});

const windowArbitrary: fc.Arbitrary<MaintenanceWindow> = fc
  .record({
    days: fc.option(
      fc.subarray(['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] as const, { minLength: 1 }),
      {
        nil: undefined,
      },
    ),
    start: fc.integer({ min: 0, max: 1439 }),
    end: fc.integer({ min: 1, max: 1440 }),
    timeZone: fc.constantFrom(...zones),
  })
  .filter((w) => w.start !== w.end)
  .map((w) => {
    const hhmm = (m: number) =>
      `${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`;
    return {
      ...(w.days ? { days: [...w.days] } : {}),
      start: hhmm(w.start),
      end: hhmm(w.end),
      timeZone: w.timeZone,
    };
  });

test('nextWindowStart is after now, opens a window, and nothing opens in between', (t) => {
  fc.assert(
    fc.property(
      windowArbitrary,
      fc.integer({
        min: Date.parse('2024-01-01T00:00:00Z'),
        max: Date.parse('2030-12-31T00:00:00Z'),
      }),
      fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 1, maxLength: 5 }),
      (window, nowMs, fractions) => {
        const now = new Date(nowMs);
        const next = nextWindowStart(window, now);
        assert.ok(next.getTime() > nowMs);
        assert.ok(next.getTime() - nowMs <= 15 * 86_400_000);
        assert.equal(isInWindow(window, next), true, 'the window is open at its start');
        const open = currentWindow(window, now);
        for (const f of fractions) {
          const between = new Date(nowMs + Math.floor(f * (next.getTime() - nowMs - 1)));
          const inside = currentWindow(window, between);
          // Out of a window now: closed until next. In one now: only that same window until next.
          if (!open) assert.equal(inside, undefined, `open at ${between.toISOString()}`);
          else if (inside) assert.deepEqual(inside, open);
        }
        if (open) {
          assert.ok(open.start.getTime() <= nowMs && nowMs < open.end.getTime());
          assert.ok(open.end.getTime() <= next.getTime(), 'windows do not overlap');
        }
      },
    ),
    { seed: testSeed(t), numRuns: 500 },
  );
});

test('bad windows are refused naming the field and the fix', () => {
  const field = 'spec.maintenanceWindow';
  const cases: [unknown, RegExp][] = [
    [null, /^spec\.maintenanceWindow: must be \{days, start, end, timeZone\}$/],
    [
      { start: '1:00', end: '05:00' },
      /^spec\.maintenanceWindow\.start: "1:00" is not a time of day; write HH:MM/,
    ],
    [{ start: '25:00', end: '05:00' }, /\.start: "25:00" is not a time of day/],
    [{ start: '24:00', end: '05:00' }, /\.start: "24:00" is not a time of day/],
    [
      { start: '01:00', end: '24:01' },
      /\.end: "24:01" is not a time of day.*"24:00" for the end of the day/,
    ],
    [{ start: '01:00', end: 500 }, /\.end: 500 is not a time of day/],
    [{ start: '01:00' }, /\.end: undefined is not a time of day/],
    [
      { start: '01:00', end: '01:00' },
      /start and end are both "01:00"; a window needs a length.*"24:00"/,
    ],
    [{ start: '00:00', end: '00:00' }, /start and end are both/],
    [
      { start: '01:00', end: '05:00', days: [] },
      /\.days: list days as Mon, Tue.*or leave days out/,
    ],
    [{ start: '01:00', end: '05:00', days: ['Saturday'] }, /\.days\[0\]: "Saturday" is not a day/],
    [{ start: '01:00', end: '05:00', days: ['sat'] }, /\.days\[0\]: "sat" is not a day/],
    [
      { start: '01:00', end: '05:00', days: ['Sat', 'Sun', 'Sat'] },
      /\.days\[2\]: Sat is listed twice/,
    ],
    [
      { start: '01:00', end: '05:00', timeZone: 'Mars/Olympus_Mons' },
      /\.timeZone: unknown time zone "Mars\/Olympus_Mons"; use an IANA/,
    ],
    [
      { start: '01:00', end: '05:00', timeZone: '+01:00' },
      /\.timeZone: "\+01:00" is not a time zone name/,
    ],
    [
      { start: '01:00', end: '05:00', timeZone: 'europe/berlin' },
      /\.timeZone: "europe\/berlin" is not a time zone name/,
    ],
    [
      { start: '01:00', end: '05:00', timeZone: 'EUROPE/BERLIN' },
      /write the time zone "EUROPE\/BERLIN" as "Europe\/Berlin"/,
    ],
    [{ start: '01:00', end: '05:00', timeZone: 'Local' }, /unknown time zone "Local"/],
    [{ start: '01:00', end: '05:00', timeZone: '' }, /"" is not a time zone name/],
    [
      { start: '01:00', end: '05:00', zone: 'UTC' },
      /^spec\.maintenanceWindow\.zone: unknown field/,
    ],
  ];
  for (const [window, message] of cases) {
    assert.throws(
      () => parseMaintenanceWindow(window, field),
      (e: Error) => errorCode(e) === 'WF_SCHEMA_INVALID' && message.test(e.message),
      `${JSON.stringify(window)} → ${message}`,
    );
  }
  // isInWindow and nextWindowStart check what they are given, too.
  assert.throws(() => isInWindow({ start: '01:00', end: '01:00' }, new Date()), {
    code: 'WF_SCHEMA_INVALID',
  });
  assert.throws(() => nextWindowStart({ start: 'x', end: '01:00' }, new Date()), {
    code: 'WF_SCHEMA_INVALID',
  });
});

test('time zone names: IANA names and links are taken as Intl resolves them', () => {
  assert.equal(parseTimeZone('UTC', 'f'), 'UTC');
  assert.equal(parseTimeZone('Europe/Berlin', 'f'), 'Europe/Berlin');
  assert.equal(parseTimeZone('America/Port-au-Prince', 'f'), 'America/Port-au-Prince');
  assert.equal(parseTimeZone('Etc/GMT+5', 'f'), 'Etc/GMT+5');
  assert.equal(parseTimeZone('US/Eastern', 'f'), 'America/New_York');
  assert.ok(['Europe/Kyiv', 'Europe/Kiev'].includes(parseTimeZone('Europe/Kyiv', 'f')));
  assert.throws(
    () => parseTimeZone(undefined, 'f'),
    /^WinfleetError: f: undefined is not a time zone name/,
  );
});

test('a parsed window can be passed instead of the spec value', () => {
  const parsed = parseMaintenanceWindow(weekendNights);
  assert.equal(isInWindow(parsed, at('2025-06-07T02:00:00Z')), true);
  assert.deepEqual(nextWindowStart(parsed, at('2025-06-07T02:00:00Z')), at('2025-06-08T01:00:00Z'));
});
