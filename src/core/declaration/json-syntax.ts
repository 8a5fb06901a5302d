/**
 * A JSON syntax error as a person finds it in an editor: Node's parser says where by its offset in the
 * text ("at position 214"); this says the line and the column (1-based), or "at its end".
 */
export function jsonSyntaxMessage(text: string, err: unknown): string {
  const message = (err as Error).message;
  const at = / in JSON at position (\d+)/.exec(message);
  if (!at) {
    if (/Unexpected end of JSON input/.test(message)) return `${message.replace(/ input$/, '')}: the text ends at line ${text.split('\n').length} before the JSON does`;
    return message;
  }
  const offset = Number(at[1]);
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  const column = offset - before.lastIndexOf('\n');
  // Node 22 adds "(line L column C)" after the position itself: said once, our way.
  const rest = message.slice(at.index + at[0].length).replace(/^ \(line \d+ column \d+\)/, '');
  return `${message.slice(0, at.index)} at line ${line}, column ${column}${rest}`;
}

/** JSON.parse, its syntax error said by line and column. */
export function parseJsonText(text: string): { ok: true; value: unknown } | { ok: false; message: string } {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (err) {
    return { ok: false, message: jsonSyntaxMessage(text, err) };
  }
}
