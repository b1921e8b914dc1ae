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
  server?: string;
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
