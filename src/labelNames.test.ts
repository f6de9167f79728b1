import { identityFirst, labelOptions } from './labelNames';

describe('labelOptions', () => {
  it('lists the labels that tell processes, threads, pods and hosts apart first, by their OTel names', () => {
    const names = [
      'cpu_logical_number',
      'host_name',
      'otel_scope_name',
      'process_pid',
      'process_executable_name',
      'thread_name',
    ];
    expect(labelOptions(names).map((o) => o.label)).toEqual([
      'process.executable.name',
      'process.pid',
      'thread.name',
      'host.name',
      'cpu_logical_number',
      'otel_scope_name',
    ]);
    expect(labelOptions(names)[0]).toMatchObject({
      value: 'process_executable_name',
      description: 'process_executable_name',
    });
  });

  it('keeps the order of the other labels', () => {
    expect(identityFirst(['b', 'a', 'host_name', 'container_id'])).toEqual(['container_id', 'host_name', 'b', 'a']);
  });
});
