import { otelName } from '../../labelNames';
import { profileTypeOptions } from './ProfileTypePicker';

const CPU = 'process_cpu:cpu:nanoseconds:cpu:nanoseconds';
const SAMPLES = 'process_cpu:samples:count:cpu:nanoseconds';
const ALLOC = 'memory:alloc_space:bytes:space:bytes';
const ALLOC_OBJECTS_1 = 'memory:alloc_objects:count:space:bytes';
const ALLOC_OBJECTS_2 = 'memory:alloc_objects:count:::';

describe('profileTypeOptions', () => {
  const types = [CPU, SAMPLES, ALLOC, ALLOC_OBJECTS_1, ALLOC_OBJECTS_2].map((id) => ({ id, label: id }));

  it('groups by name, then sample type, then units where a sample type has several ids', () => {
    expect(profileTypeOptions(types)).toEqual([
      {
        value: 'name:process_cpu',
        label: 'process_cpu',
        items: [
          { value: CPU, label: 'cpu', title: CPU },
          { value: SAMPLES, label: 'samples', title: SAMPLES },
        ],
      },
      {
        value: 'name:memory',
        label: 'memory',
        items: [
          { value: ALLOC, label: 'alloc_space', title: ALLOC },
          {
            value: 'sample:memory:alloc_objects',
            label: 'alloc_objects',
            items: [
              { value: ALLOC_OBJECTS_1, label: 'count per space bytes', title: ALLOC_OBJECTS_1 },
              { value: ALLOC_OBJECTS_2, label: 'count per -', title: ALLOC_OBJECTS_2 },
            ],
          },
        ],
      },
    ]);
  });

  it('lists a current value without data (or a variable) first, and odd ids flat', () => {
    const options = profileTypeOptions([{ id: 'odd', label: 'odd' }, ...types.slice(0, 1)], '$type');
    expect(options.map((o) => o.value)).toEqual(['$type', 'name:process_cpu', 'odd']);
  });
});

describe('otelName', () => {
  it.each([
    ['service_name', 'service.name'],
    ['k8s_pod_name', 'k8s.pod.name'],
    ['cloud_availability_zone', 'cloud.availability_zone'],
    ['deployment_environment_name', 'deployment.environment.name'],
    ['k8s_replicaset_uid', 'k8s.replicaset.uid'],
    ['pyroscope_profile_id', undefined],
    ['region', undefined],
  ])('names %s as %s', (label, expected) => {
    expect(otelName(label)).toBe(expected);
  });
});
