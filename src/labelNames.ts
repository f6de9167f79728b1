import { SelectableValue } from '@grafana/data';

/**
 * OpenTelemetry names of selector labels. The backend lists attribute keys with dots as underscores
 * (`k8s.pod.name` is the label `k8s_pod_name`); the editor shows the OTel name so that users recognise their
 * resource attributes. Known semantic-convention keys are mapped exactly (some contain underscores, such as
 * `cloud.availability_zone`); other keys in a semantic-convention namespace get every underscore as a dot.
 */
const KNOWN_KEYS = [
  'service.name',
  'service.namespace',
  'service.instance.id',
  'service.version',
  'deployment.environment',
  'deployment.environment.name',
  'k8s.cluster.name',
  'k8s.namespace.name',
  'k8s.node.name',
  'k8s.pod.name',
  'k8s.pod.uid',
  'k8s.container.name',
  'k8s.container.restart_count',
  'k8s.deployment.name',
  'k8s.replicaset.name',
  'k8s.statefulset.name',
  'k8s.daemonset.name',
  'k8s.job.name',
  'k8s.cronjob.name',
  'container.id',
  'container.name',
  'container.runtime',
  'container.image.name',
  'container.image.tag',
  'host.id',
  'host.name',
  'host.type',
  'host.arch',
  'os.type',
  'os.version',
  'os.description',
  'process.pid',
  'process.owner',
  'process.command',
  'process.command_line',
  'process.executable.name',
  'process.executable.path',
  'process.runtime.name',
  'process.runtime.version',
  'cloud.provider',
  'cloud.platform',
  'cloud.region',
  'cloud.availability_zone',
  'cloud.account.id',
  'telemetry.sdk.name',
  'telemetry.sdk.language',
  'telemetry.sdk.version',
  'thread.id',
  'thread.name',
];

const BY_LABEL = new Map(KNOWN_KEYS.map((key) => [key.replace(/\./g, '_'), key]));

const NAMESPACES =
  /^(service|deployment|k8s|container|host|os|process|cloud|telemetry|thread|faas|aws|gcp|azure|device|browser)_/;

/** The OTel attribute key a label stands for, e.g. `k8s.pod.name` for `k8s_pod_name`; undefined for others. */
export function otelName(label: string): string | undefined {
  const known = BY_LABEL.get(label);
  if (known) {
    return known;
  }
  return NAMESPACES.test(label) ? label.replace(/_/g, '.') : undefined;
}

/** A label as a select option: shown by its OTel name when it has one, with the selector name as description. */
export function labelOption(label: string): SelectableValue<string> {
  const otel = otelName(label);
  return otel ? { label: otel, value: label, description: label } : { label, value: label };
}

/**
 * Labels that say which process, thread, container, pod or host a sample is from: what the eBPF profiler sends
 * (process.pid, process.executable.name, thread.name; container.id when there is one) and what the Collector's
 * k8sattributes and resourcedetection processors add. Label lists show them first, in this order, when the data
 * has them: a host profiled by the eBPF profiler has no service.name but these.
 */
export const IDENTITY_LABELS = [
  'service_name',
  'process_executable_name',
  'process_pid',
  'thread_name',
  'container_id',
  'k8s_pod_name',
  'k8s_namespace_name',
  'k8s_node_name',
  'host_name',
];

/** Label names with the identity labels first, in their order; the others keep theirs (sorted by the backend). */
export function identityFirst(names: readonly string[]): string[] {
  const rank = (n: string) => {
    const i = IDENTITY_LABELS.indexOf(n);
    return i < 0 ? IDENTITY_LABELS.length : i;
  };
  return [...names].sort((a, b) => rank(a) - rank(b));
}

/** Label names as select options, the identity labels first. */
export function labelOptions(names: readonly string[]): Array<SelectableValue<string>> {
  return identityFirst(names).map(labelOption);
}
