/**
 * A provisioned value as Grafana reads it: `$$` is a literal `$`. (Environment variables, `$NAME` and `${NAME}`,
 * are not expanded here.)
 */
export function unescapeDollars(value: string): string {
  return value.replace(/\$\$/g, '$');
}
