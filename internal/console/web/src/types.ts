// The API's shapes, as package server writes them.

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens?: number;
  total_tokens: number;
  estimated?: boolean;
}

export interface Pending {
  id: string;
  kind: "question" | "approval";
  agent: string;
  question?: string;
  reason?: string;
  commands?: { tool_name: string; namespace?: string; parameters?: Record<string, unknown> }[];
  status: string;
  answer?: string;
  approved?: boolean;
  created_at: string;
  expires_at: string;
  settled_by?: string;
}

export interface TaskSummary {
  id: string;
  client_id: string;
  task_name: string;
  request: string;
  status: string;
  queued_by: string;
  created_at: string;
  ended_at?: string;
  error?: string;
  steps: number;
  usage: Usage;
  cost?: string;
  open: Pending[];
}

export interface Action {
  call_id?: string;
  tool: string;
  namespace?: string;
  call: string;
  status?: string;
  output?: string;
  error?: string;
}

export interface Screenshot {
  sha256: string;
  width?: number;
  height?: number;
  x?: number;
  y?: number;
  clicked?: boolean;
  url: string;
}

export interface Step {
  n: number;
  agent: string;
  round: number;
  step: number;
  status: string;
  thought?: string;
  result?: string;
  commands: number;
  failed: number;
  duration_ms: number;
  error?: string;
  actions?: Action[];
  usage?: Usage;
  screenshot?: Screenshot;
}

export interface CommandState {
  call_id: string;
  tool_name: string;
  namespace?: string;
  state: string;
  elapsed_ms?: number;
  error?: string;
  updated_at: string;
}

export interface Progress {
  call_id: string;
  progress: number;
  total?: number;
  message?: string;
  lines?: string[];
}

export interface Decision {
  agent: string;
  step: number;
  status: string;
  thought?: string;
  actions?: string[];
}

export interface TaskInfo {
  id: string;
  client_id: string;
  task_name: string;
  request: string;
  status: string;
  queued_by: string;
  created_at: string;
  ended_at?: string;
  result?: string;
  error?: string;
  steps: Step[];
  commands: CommandState[];
  steps_omitted?: number;
  pending: Pending[];
  usage: Usage;
  cost?: string;
  progress?: Progress[];
}

export interface Client {
  client_id: string;
  client_type: string;
  platform: string;
  status: string;
  connected_at: string;
  last_seen: string;
  running_tasks: number;
  device_info: {
    hostname?: string;
    os_version?: string;
    arch?: string;
    cpu_count?: number;
    memory_total_gb?: number;
    supported_features?: string[];
  };
  namespaces?: Record<string, string>;
  tools?: ToolsSummary;
  server?: string;
}

// Where the server learned a device's tools: "device" (asked outside a
// task) or "task" (its last task's listings).
export interface ToolsSummary {
  count: number;
  source?: string;
  learned_at?: string;
}

export interface DeviceTool {
  namespace: string;
  name: string;
  title?: string;
  tool_type?: string;
  description?: string;
  risk?: string;
  annotations: { read_only?: boolean; destructive?: boolean; idempotent?: boolean; open_world?: boolean };
  streams?: string[];
}

export interface DeviceTools {
  client_id: string;
  source?: string;
  learned_at?: string;
  task_id?: string;
  note: string;
  tools: DeviceTool[];
}

// A constellation, as package constellation writes it.
export interface CNode {
  id: string;
  device: string;
  task: string;
  apps?: string[];
  status: string;
  attempts?: number;
  task_id?: string;
  result?: string;
  error?: string;
  lost?: string[];
}

export interface Graph {
  id: string;
  request: string;
  version: number;
  status: string;
  nodes: CNode[];
  edges: { from: string; to: string }[];
  answer?: string;
  error?: string;
  created_at: string;
}

// A constellation as the list shows it: no nodes, their counts.
export interface CSummary {
  id: string;
  request: string;
  status: string;
  version: number;
  created_at: string;
  answer?: string;
  error?: string;
  cut?: string[];
  planner_steps: number;
  nodes: { total: number; pending: number; running: number; completed: number; failed: number; cancelled: number };
}

export interface CPage {
  constellations: CSummary[];
  next?: string;
  next_url?: string;
}

export interface Edit {
  op: string;
  args: Record<string, unknown>;
  ok: boolean;
  reason?: string;
}

export interface CEvent {
  kind: string;
  version: number;
  node?: string;
  device?: string;
  status?: string;
  edits?: Edit[];
  graph?: Graph;
  task_id?: string;
  moved_to?: string;
  answer?: string;
  outcome?: { ok: boolean; result?: string; error?: string; device_lost?: boolean };
  time: string;
}

export interface RunSummary {
  id: string;
  task: string;
  model: string;
  started_at: string;
  ended_at?: string;
  status?: string;
  answer?: string;
}

export interface RunInfo extends RunSummary {
  mode?: string;
  error?: string;
  model_calls: number;
  usage: Usage;
  cost?: string;
  steps: Step[];
}

export interface ReplayInfo {
  status: string;
  answer: string;
  identical: boolean;
  diff?: string;
  model_calls: number;
  dispatches: number;
}

export interface EvalSummary {
  name: string;
  suite: string;
  cases: number;
  trials: number;
  success_rate: number;
  modified_at: string;
  files: string[];
}
