// Template and system variables in the welcome message and system prompt: `{{name}}` is replaced by the value the
// conversation was given, else the agent's default; system variables give the date and time in the agent's time
// zone at the conversation's start. An unknown name is left as written.

export interface TemplateDefinitions {
  [name: string]: { default_value: string };
}

const DATE: Intl.DateTimeFormatOptions = { month: 'long', day: 'numeric' };
const TIME: Intl.DateTimeFormatOptions = { hour: '2-digit', minute: '2-digit', hourCycle: 'h23' };
const WEEKDAY: Intl.DateTimeFormatOptions = { weekday: 'long' };
const YEAR: Intl.DateTimeFormatOptions = { year: 'numeric' };
/**
 * Time zones whose formatters are kept: building the four Intl.DateTimeFormat is most of a conversation start's
 * cost here, and agents use a handful of zones. Past the bound the oldest zone is dropped.
 */
const MAX_CACHED_ZONES = 64;

interface ZoneFormats {
  date: Intl.DateTimeFormat;
  time: Intl.DateTimeFormat;
  weekday: Intl.DateTimeFormat;
  year: Intl.DateTimeFormat;
}

const formatsByZone = new Map<string, ZoneFormats>();

/** The zone's formatters, built once (an unknown zone throws RangeError, as the constructor does, and is not kept). */
function formatsOf(timeZone: string): ZoneFormats {
  const cached = formatsByZone.get(timeZone);
  if (cached) return cached;
  const of = (opts: Intl.DateTimeFormatOptions) => new Intl.DateTimeFormat('en-US', { timeZone, ...opts });
  const formats = { date: of(DATE), time: of(TIME), weekday: of(WEEKDAY), year: of(YEAR) };
  if (formatsByZone.size >= MAX_CACHED_ZONES) formatsByZone.delete(formatsByZone.keys().next().value!);
  formatsByZone.set(timeZone, formats);
  return formats;
}

/** system_date ("November 22"), system_time ("17:35"), system_weekday, system_year, system_conversation_timezone. */
export function systemVariables(at: Date, timeZone: string): Record<string, string> {
  const f = formatsOf(timeZone);
  return {
    system_date: f.date.format(at),
    system_time: f.time.format(at),
    system_weekday: f.weekday.format(at),
    system_year: f.year.format(at),
    system_conversation_timezone: timeZone,
  };
}

/** The values in force: the agent's defaults, overridden by those the conversation was given. */
export function templateValues(
  definitions: TemplateDefinitions,
  given: Record<string, string>,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, def] of Object.entries(definitions)) out[name] = def.default_value;
  return Object.assign(out, given);
}

const PLACEHOLDER = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;

export function substitute(text: string, values: Record<string, string>): string {
  return text.replace(PLACEHOLDER, (whole, name: string) => (Object.hasOwn(values, name) ? values[name] : whole));
}
