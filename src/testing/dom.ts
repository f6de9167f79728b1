/**
 * Browser APIs that jsdom lacks and @grafana/ui's menus use (Select's scroll indicators, the Cascader's popup
 * and its animations).
 * Import this module first in tests that open those menus.
 */
class NoopObserver {
  observe() {}
  unobserve() {}
  disconnect() {}
  takeRecords() {
    return [];
  }
}

type Listener = ((e: { data: unknown }) => void) | null;

/** Two ports that deliver messages to each other on a later tick. */
class FakeMessageChannel {
  port1 = new FakePort();
  port2 = new FakePort();
  constructor() {
    this.port1.peer = this.port2;
    this.port2.peer = this.port1;
  }
}

class FakePort {
  peer?: FakePort;
  onmessage: Listener = null;
  postMessage(data: unknown) {
    setTimeout(() => this.peer?.onmessage?.({ data }), 0);
  }
  start() {}
  close() {}
}

if (!('MessageChannel' in globalThis)) {
  Object.defineProperty(globalThis, 'MessageChannel', {
    writable: true,
    configurable: true,
    value: FakeMessageChannel,
  });
}

for (const name of ['ResizeObserver', 'IntersectionObserver'] as const) {
  if (!(name in globalThis)) {
    Object.defineProperty(globalThis, name, { writable: true, configurable: true, value: NoopObserver });
  }
}

export {};
