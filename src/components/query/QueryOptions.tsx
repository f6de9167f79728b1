import React, { useState } from 'react';
import { CoreApp, SelectableValue } from '@grafana/data';
import { Collapse, InlineField, InlineFieldRow, InlineSwitch, Input, MultiSelect, RadioButtonGroup } from '@grafana/ui';

import { baselineSummary } from '../../diff';
import { describePath } from '../../focus';
import { frameMode, frameModesSummary, withFrameMode } from '../../frameKinds';
import { containsVariable } from '../../interpolate';
import { labelOptions } from '../../labelNames';
import { selectors } from '../../selectors';
import { FrameKind, FrameMode, FunctionValue, ProfileQuery, QueryType } from '../../types';
import { QUERY_LIMITS } from '../../generated/backend';
import { Lookup } from './hooks';

/** Backend limits (pkg/query/request.go). */
export const LIMITS = QUERY_LIMITS;

const TYPES: Array<SelectableValue<QueryType>> = [
  { label: 'Profile', value: 'profile', description: 'Flame graph' },
  { label: 'Metrics', value: 'metrics', description: 'Time series' },
  { label: 'Both', value: 'both', description: 'Flame graph and time series' },
  { label: 'Table', value: 'table', description: 'Top functions' },
  { label: 'Diff', value: 'diff', description: 'Diff flame graph: this selection and range against a baseline' },
  { label: 'Spans', value: 'spans', description: 'The spans with the most profile value, with links to their traces' },
  {
    label: 'Executables',
    value: 'executables',
    description:
      'The executables and libraries of the selection: share of samples, share of frames named, symbol source; each links to its flame graph',
  },
  {
    label: 'Profiles',
    value: 'profiles',
    description:
      'The single profiles of the selection as they came in (time, resource, duration, samples, total); each opens its own flame graph or downloads as pprof',
  },
  {
    label: 'Trace',
    value: 'traces',
    description: "One trace from the Collector exporter's traces table, its spans marked where they have profiles",
  },
];

/** Query types whose options include the function filter and max nodes. */
const PROFILE_TYPES: readonly QueryType[] = ['profile', 'metrics', 'both', 'table', 'diff'];
/** Query types whose options include group by (it splits time series; flame graphs and tables keep it for both). */
const GROUP_BY_TYPES: readonly QueryType[] = ['profile', 'metrics', 'both', 'table'];
/** Query types of time series: ratio. */
const SERIES_TYPES: readonly QueryType[] = ['metrics', 'both'];
/** Query types that take the executable filter (build id, mapped file); the backend refuses it on the others. */
const EXECUTABLE_FILTER_TYPES: readonly QueryType[] = ['profile', 'metrics', 'both', 'table'];
/** Query types whose frames the frame kinds shape: flame graphs and tables. */
const FRAME_TYPES: readonly QueryType[] = ['profile', 'both', 'table', 'diff'];

const FRAME_MODES: Array<SelectableValue<FrameMode>> = [
  { label: 'Show', value: 'show', description: 'Marked in the label, e.g. "do_syscall_64 [kernel]"' },
  { label: 'Collapse', value: 'collapse', description: 'Each run of them is one node' },
  { label: 'Hide', value: 'hide', description: 'Dropped: their samples go to the caller' },
];

/** The frame kinds' options: what they are, for the tooltips. */
const FRAME_KIND_OPTIONS: Array<{ kind: FrameKind; label: string; tooltip: string; testId: string }> = [
  {
    kind: 'kernel',
    label: 'Kernel frames',
    tooltip:
      'Frames of the kernel (the eBPF profiler sends them below system calls and interrupts): shown marked "name [kernel]", collapsed into one [kernel] node per run, or hidden (their samples go to the caller).',
    testId: selectors.query.kernelFrames,
  },
  {
    kind: 'native',
    label: 'Native frames',
    tooltip:
      'The interpreter\'s own native frames in stacks of Python, Java, Ruby, PHP, Node.js, .NET and other runtimes (e.g. _PyEval_EvalFrameDefault): shown marked "name [native]", collapsed into one [native] node per run, or hidden, which leaves the program\'s own functions. Native programs (C, C++, Rust, Go) keep theirs.',
    testId: selectors.query.nativeFrames,
  },
];

const FUNCTION_VALUES: Array<SelectableValue<FunctionValue>> = [
  { label: 'Total', value: 'total', description: 'Stacks that contain the function' },
  { label: 'Self', value: 'self', description: 'Stacks whose leaf is the function' },
];

interface Props {
  query: ProfileQuery;
  app?: CoreApp;
  labelNames: Lookup<string[]>;
  defaultMaxNodes?: number;
  /** Stores the changes and runs the query. */
  onChange: (patch: Partial<ProfileQuery>) => void;
}

/** The query type as the editor shows it: "both" is offered in Explore only, and is a flame graph elsewhere. */
export function effectiveQueryType(query: ProfileQuery, app?: CoreApp): QueryType {
  const type = query.queryType ?? 'profile';
  return type === 'both' && app !== CoreApp.Explore ? 'profile' : type;
}

/** The collapsed options' summary, e.g. "Type: Metrics, Group by: service_name, Limit: 10". */
export function optionsSummary(query: ProfileQuery, app?: CoreApp): string {
  const type = effectiveQueryType(query, app);
  const parts = [`Type: ${TYPES.find((t) => t.value === type)?.label ?? type}`];
  if (query.groupBy?.length) {
    parts.push(`Group by: ${query.groupBy.join(', ')}`);
  }
  if (query.limit) {
    parts.push(`Limit: ${query.limit}`);
  }
  if (query.maxNodes) {
    parts.push(`Max nodes: ${query.maxNodes}`);
  }
  if (query.spanSelector?.length) {
    parts.push(`Spans: ${query.spanSelector.join(', ')}`);
  }
  if (query.traceId) {
    parts.push(`Trace: ${query.traceId}`);
  }
  if (query.function) {
    parts.push(`Function: ${query.function} (${query.functionValue ?? 'total'})`);
  }
  if (query.seriesId) {
    parts.push(`Series: ${query.seriesId}`);
  }
  if (query.intervalStart && query.intervalSeconds) {
    parts.push(`Interval: ${intervalSummary(query.intervalStart, query.intervalSeconds)}`);
  }
  if (query.focusPath?.length && (type === 'profile' || type === 'both')) {
    parts.push(`Opened: ${describePath(query.focusPath)}`);
  }
  if (query.ratio && SERIES_TYPES.includes(type)) {
    parts.push('Ratio');
  }
  if (type === 'diff') {
    parts.push(`Baseline: ${baselineSummary(query.left)}`);
  }
  if (query.mappingFile || query.buildId) {
    parts.push(`Executable: ${[query.mappingFile, query.buildId].filter(Boolean).join(' ')}`);
  }
  if (FRAME_TYPES.includes(type)) {
    parts.push(...frameModesSummary(query));
  }
  return parts.join(', ');
}

/** An interval as the summary shows it: its start (UTC) and length, e.g. "2025-01-02 10:00:00 + 5 s". */
function intervalSummary(start: string, seconds: number | string): string {
  const ms = Number(start);
  const at = Number.isFinite(ms)
    ? new Date(ms)
        .toISOString()
        .replace('T', ' ')
        .replace(/\.\d+Z$/, '')
    : start;
  return `${at} + ${seconds} s`;
}

/**
 * Query type, group by, limit, max nodes, span ids and trace id, collapsed under a summary. A spans query has no
 * group by or max nodes; a traces query only its type (its trace id is next to the profile type).
 */
export function QueryOptions({ query, app, labelNames, defaultMaxNodes, onChange }: Props) {
  const [open, setOpen] = useState(false);
  const types = TYPES.filter((t) => t.value !== 'both' || app === CoreApp.Explore);
  const type = effectiveQueryType(query, app);
  return (
    <div data-testid={selectors.query.options}>
      <Collapse
        isOpen={open}
        onToggle={() => setOpen(!open)}
        label={
          <span>
            Options <small data-testid={selectors.query.optionsSummary}>{optionsSummary(query, app)}</small>
          </span>
        }
      >
        <InlineFieldRow>
          <InlineField label="Query type" labelWidth={14}>
            <div data-testid={selectors.query.queryType}>
              <RadioButtonGroup
                options={types}
                value={type}
                onChange={(queryType) =>
                  onChange(
                    EXECUTABLE_FILTER_TYPES.includes(queryType)
                      ? { queryType }
                      : { queryType, buildId: undefined, mappingFile: undefined }
                  )
                }
              />
            </div>
          </InlineField>
        </InlineFieldRow>
        {type !== 'traces' && (
          <OtherOptions
            query={query}
            profileOptions={PROFILE_TYPES.includes(type)}
            groupByOption={GROUP_BY_TYPES.includes(type)}
            spanOptions={type !== 'diff' && type !== 'profiles'}
            seriesOptions={SERIES_TYPES.includes(type)}
            executableOption={EXECUTABLE_FILTER_TYPES.includes(type)}
            frameOptions={FRAME_TYPES.includes(type)}
            labelNames={labelNames}
            defaultMaxNodes={defaultMaxNodes}
            onChange={onChange}
          />
        )}
      </Collapse>
    </div>
  );
}

interface OtherOptionsProps extends Omit<Props, 'app'> {
  /** Whether to show the options of flame graphs, tables and series: function and max nodes. */
  profileOptions: boolean;
  /** Whether to show group by. */
  groupByOption: boolean;
  /** Whether to show span and trace ids (a diff compares selections and ranges, not spans). */
  spanOptions: boolean;
  /** Whether to show the options of time series: ratio. */
  seriesOptions: boolean;
  /** Whether to show the executable filter (mapped file, build id). */
  executableOption: boolean;
  /** Whether to show what flame graphs and tables do with kernel and native frames. */
  frameOptions: boolean;
}

/** The options below the query type. */
function OtherOptions({
  query,
  profileOptions,
  groupByOption,
  spanOptions,
  seriesOptions,
  executableOption,
  frameOptions,
  labelNames,
  defaultMaxNodes,
  onChange,
}: OtherOptionsProps) {
  const groupBy = query.groupBy ?? [];
  return (
    <>
      {groupByOption && (
        <InlineFieldRow data-testid={selectors.query.groupBy}>
          <InlineField
            label="Group by"
            labelWidth={14}
            tooltip={`Labels that split the time series, and a flame graph's root into one node per group: by process (process.executable.name, process.pid), thread, container, pod or host, at most ${LIMITS.groupBy}. Tables are not grouped.`}
            invalid={groupBy.length > LIMITS.groupBy}
            error={`At most ${LIMITS.groupBy} labels`}
          >
            <MultiSelect
              aria-label="Group by"
              width={50}
              placeholder="Labels, e.g. process.executable.name"
              options={labelOptions(labelNames.value)}
              isLoading={labelNames.loading}
              value={groupBy}
              allowCustomValue
              onChange={(v) => onChange({ groupBy: v.map((o) => o.value ?? '').filter(Boolean) })}
            />
          </InlineField>
        </InlineFieldRow>
      )}
      <InlineFieldRow>
        <CommitInput
          label="Limit"
          tooltip="Time series: the top N groups by total (default 100). Table: rows (default 1000). Spans: spans (default 100). Profiles: the newest N (default 100)."
          testId={selectors.query.limit}
          value={query.limit === undefined ? '' : String(query.limit)}
          placeholder="100"
          validate={(t) => validateCount(t, LIMITS.limit)}
          onCommit={(t) => onChange({ limit: t ? Number(t) : undefined })}
        />
        {profileOptions && (
          <CommitInput
            label="Max nodes"
            tooltip="Flame graph nodes; smaller ones are folded into 'other'."
            testId={selectors.query.maxNodes}
            value={query.maxNodes === undefined ? '' : String(query.maxNodes)}
            placeholder={String(defaultMaxNodes ?? LIMITS.defaultMaxNodes)}
            validate={(t) => validateCount(t, LIMITS.maxNodes)}
            onCommit={(t) => onChange({ maxNodes: t ? Number(t) : undefined })}
          />
        )}
      </InlineFieldRow>
      {profileOptions && (
        <InlineFieldRow>
          <CommitInput
            label="Function"
            tooltip="Only stacks through this function, named as in the flame graph (e.g. regexp.Compile): for alerts on one function's CPU or memory."
            testId={selectors.query.function}
            width={40}
            value={query.function ?? ''}
            placeholder="e.g. regexp.Compile"
            validate={() => undefined}
            onCommit={(t) => onChange({ function: t || undefined })}
          />
          <InlineField
            label="Function value"
            labelWidth={14}
            tooltip="Total: stacks that contain the function. Self: stacks whose leaf it is."
          >
            <div data-testid={selectors.query.functionValue}>
              <RadioButtonGroup<FunctionValue>
                size="sm"
                options={FUNCTION_VALUES}
                value={query.functionValue ?? 'total'}
                disabled={!query.function}
                onChange={(functionValue) => onChange({ functionValue })}
              />
            </div>
          </InlineField>
          {seriesOptions && (
            <InlineField
              label="Ratio"
              labelWidth={14}
              tooltip="Series as shares (0-100%): the function's share of its group, or without a function each group's share of all."
            >
              <InlineSwitch
                data-testid={selectors.query.ratio}
                aria-label="Ratio"
                value={!!query.ratio}
                onChange={(e) => onChange({ ratio: e.currentTarget.checked || undefined })}
              />
            </InlineField>
          )}
        </InlineFieldRow>
      )}
      {executableOption && (
        <InlineFieldRow>
          <CommitInput
            label="Mapping file"
            tooltip="Only stacks through this executable or library: its mapped file, exact (e.g. /usr/lib/libc.so.6), as the Executables view links to it."
            testId={selectors.query.mappingFile}
            width={40}
            value={query.mappingFile ?? ''}
            placeholder="e.g. /usr/lib/libc.so.6"
            validate={() => undefined}
            onCommit={(t) => onChange({ mappingFile: t || undefined })}
          />
          <CommitInput
            label="Build ID"
            tooltip="Only stacks through the executable with this build id (hex, or a Go build id)."
            testId={selectors.query.buildId}
            width={40}
            value={query.buildId ?? ''}
            placeholder="hex"
            validate={validateBuildId}
            onCommit={(t) => onChange({ buildId: t || undefined })}
          />
        </InlineFieldRow>
      )}
      {frameOptions && (
        <InlineFieldRow>
          {FRAME_KIND_OPTIONS.map((o) => (
            <InlineField key={o.kind} label={o.label} labelWidth={16} tooltip={o.tooltip}>
              <div data-testid={o.testId}>
                <RadioButtonGroup<FrameMode>
                  size="sm"
                  options={FRAME_MODES}
                  value={frameMode(query, o.kind)}
                  onChange={(mode) => onChange(withFrameMode(query, o.kind, mode))}
                />
              </div>
            </InlineField>
          ))}
        </InlineFieldRow>
      )}
      {spanOptions && (
        <InlineFieldRow>
          <CommitInput
            label="Span IDs"
            tooltip="Only samples of these spans: 16 hex digits each, separated by commas or spaces."
            testId={selectors.query.spanSelector}
            width={50}
            value={(query.spanSelector ?? []).join(', ')}
            placeholder="e.g. 1a2b3c4d5e6f7a8b"
            validate={validateSpanIds}
            onCommit={(t) => onChange({ spanSelector: splitIds(t) })}
          />
          <CommitInput
            label="Trace ID"
            tooltip="Only samples of this trace: 32 hex digits."
            testId={selectors.query.traceId}
            width={40}
            value={query.traceId ?? ''}
            placeholder="32 hex digits"
            validate={validateTraceId}
            onCommit={(t) => onChange({ traceId: t || undefined })}
          />
        </InlineFieldRow>
      )}
    </>
  );
}

/** Span ids typed in a field: separated by commas or whitespace. */
export function splitIds(text: string): string[] {
  return text.split(/[\s,]+/).filter((s) => s !== '');
}

/** Why span ids are invalid, or undefined. Variables are accepted as they are. */
export function validateSpanIds(text: string): string | undefined {
  const bad = splitIds(text).filter((id) => !/^[0-9a-fA-F]{16}$/.test(id) && !containsVariable(id));
  return bad.length ? `Not a span id (16 hex digits): ${bad.join(', ')}` : undefined;
}

/** Why a build id is invalid (pkg/query's buildIDPattern), or undefined. Variables are accepted as they are. */
export function validateBuildId(text: string): string | undefined {
  const id = text.trim();
  return id === '' || /^[0-9A-Za-z_=+./-]{1,256}$/.test(id) || containsVariable(id)
    ? undefined
    : 'A build id is hex digits (GNU) or a Go build id';
}

/** Why a trace id is invalid, or undefined. */
export function validateTraceId(text: string): string | undefined {
  const id = text.trim();
  return id === '' || /^[0-9a-fA-F]{32}$/.test(id) || containsVariable(id) ? undefined : 'A trace id is 32 hex digits';
}

function validateCount(text: string, max: number): string | undefined {
  if (text.trim() === '') {
    return undefined;
  }
  const n = Number(text);
  return Number.isInteger(n) && n >= 1 && n <= max ? undefined : `A whole number from 1 to ${max}`;
}

interface CommitInputProps {
  label: string;
  tooltip: string;
  testId: string;
  value: string;
  placeholder?: string;
  width?: number;
  validate: (text: string) => string | undefined;
  onCommit: (text: string) => void;
}

/** A text field stored on blur or Enter when valid; invalid text stays, with its error. */
export function CommitInput({
  label,
  tooltip,
  testId,
  value,
  placeholder,
  width = 16,
  validate,
  onCommit,
}: CommitInputProps) {
  const [text, setText] = useState(value);
  const [synced, setSynced] = useState(value);
  const [error, setError] = useState<string>();
  if (value !== synced) {
    setSynced(value);
    setText(value);
    setError(undefined);
  }
  const commit = () => {
    const trimmed = text.trim();
    const err = validate(trimmed);
    setError(err);
    if (!err && trimmed !== value) {
      onCommit(trimmed);
    }
  };
  return (
    <InlineField label={label} labelWidth={14} tooltip={tooltip} invalid={!!error} error={error}>
      <Input
        data-testid={testId}
        aria-label={label}
        width={width}
        value={text}
        placeholder={placeholder}
        onChange={(e) => setText(e.currentTarget.value)}
        onBlur={commit}
        onKeyDown={(e) => e.key === 'Enter' && commit()}
      />
    </InlineField>
  );
}
