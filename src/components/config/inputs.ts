import { FormEvent } from 'react';

/** An onChange handler that passes the input's or text area's text on. */
export function textValue<T extends HTMLInputElement | HTMLTextAreaElement>(apply: (v: string) => void) {
  return (e: FormEvent<T>) => apply(e.currentTarget.value);
}

/** The number typed into a number input; undefined when empty. */
export function numberOrUndefined(v: string): number | undefined {
  return v.trim() === '' ? undefined : Number(v);
}
