// Template and system variables in the welcome message and system prompt: `{{name}}` is replaced by the value the
// conversation was given, else the agent's default; system variables give the date and time in the agent's time
// zone at the conversation's start. An unknown name is left as written.

export interface TemplateDefinitions {
  [name: string]: { default_value: string };
}

/** system_date ("November 22"), system_time ("17:35"), system_weekday, system_year, system_conversation_timezone. */
export function systemVariables(at: Date, timeZone: string): Record<string, string> {
  const part = (opts: Intl.DateTimeFormatOptions) => new Intl.DateTimeFormat('en-US', { timeZone, ...opts }).format(at);
  return {
    system_date: part({ month: 'long', day: 'numeric' }),
    system_time: part({ hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }),
    system_weekday: part({ weekday: 'long' }),
    system_year: part({ year: 'numeric' }),
    system_conversation_timezone: timeZone,
  };
}

/** The values in force: the agent's defaults, overridden by those the conversation was given. */
export function templateValues(definitions: TemplateDefinitions, given: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, def] of Object.entries(definitions)) out[name] = def.default_value;
  return Object.assign(out, given);
}

const PLACEHOLDER = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;

export function substitute(text: string, values: Record<string, string>): string {
  return text.replace(PLACEHOLDER, (whole, name: string) => (Object.hasOwn(values, name) ? values[name] : whole));
}
