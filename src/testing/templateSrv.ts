import { ScopedVars } from '@grafana/data';
import { setTemplateSrv, TemplateSrv } from '@grafana/runtime';

/** A dashboard variable of the fake: its current value(s) and how it was defined. */
export interface FakeVariable {
  value: string | string[];
  multi?: boolean;
  includeAll?: boolean;
}

type Format = (value: string | string[], variable: FakeVariable) => string;

/**
 * Installs a TemplateSrv that behaves like Grafana's for the tests' purposes: $name, ${name}, ${name:csv} and
 * [[name]]; scoped variables before dashboard ones; a format function gets the value(s) and the variable; without
 * one, several values are written as a glob, {a,b}, as Grafana does by default. Unknown variables stay as text.
 */
export function installTemplateSrv(variables: Record<string, FakeVariable> = {}): TemplateSrv {
  const srv: TemplateSrv = {
    getVariables: () => [],
    containsTemplate: (target) => !!target && /\$|\[\[/.test(target),
    updateTimeRange: () => {},
    replace(target = '', scopedVars: ScopedVars = {}, format?: string | Function) {
      return target.replace(/\$\{(\w+)(?::(\w+))?\}|\$(\w+)|\[\[(\w+)\]\]/g, (match, braced, fmt, plain, old) => {
        const name: string = braced ?? plain ?? old;
        const scoped = scopedVars[name];
        const variable: FakeVariable | undefined = scoped ? { value: String(scoped.value) } : variables[name];
        if (!variable) {
          return match;
        }
        const values = ([] as string[]).concat(variable.value);
        if (fmt === 'csv') {
          return values.join(',');
        }
        if (typeof format === 'function') {
          return (format as Format)(variable.value, variable);
        }
        return values.length === 1 ? values[0] : `{${values.join(',')}}`;
      });
    },
  };
  setTemplateSrv(srv);
  return srv;
}
