package store

import (
	"context"
	"slices"
	"sort"
	"sync"
)

// Memory is a Store in the process's memory: fast, and gone with the
// process.
type Memory struct {
	mu      sync.Mutex
	tasks   map[string]Task
	journal map[string][]Entry
	devices map[string]Device
	outbox  map[string][][]byte
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty memory store.
func NewMemory() *Memory {
	return &Memory{tasks: map[string]Task{}, journal: map[string][]Entry{}, devices: map[string]Device{}, outbox: map[string][][]byte{}}
}

func (m *Memory) PutTask(_ context.Context, t Task, _ bool) error {
	t.Data = slices.Clone(t.Data)
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.tasks[t.ID]; ok && old.Server != "" && old.Server != t.Server {
		return nil // another server runs it now
	}
	m.tasks[t.ID] = t
	return nil
}

func (m *Memory) Task(_ context.Context, id string) (Task, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tasks[id]
	if !ok {
		return Task{}, ErrNotFound
	}
	return t, nil
}

func (m *Memory) Tasks(_ context.Context, status string, limit int) ([]Task, error) {
	m.mu.Lock()
	out := make([]Task, 0, len(m.tasks))
	for _, t := range m.tasks {
		if status == "" || t.Status == status {
			out = append(out, t)
		}
	}
	m.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.After(out[j].CreatedAt) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func (m *Memory) DeleteTask(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.tasks, id)
	delete(m.journal, id)
	return nil
}

func (m *Memory) Append(_ context.Context, taskID string, e Entry, _ bool) error {
	e.Data = slices.Clone(e.Data)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.journal[taskID] = append(m.journal[taskID], e)
	return nil
}

// Sync has nothing to wait for: every write is applied before it returns.
func (m *Memory) Sync(context.Context, string) error { return nil }

func (m *Memory) Journal(_ context.Context, taskID string) ([]Entry, error) {
	m.mu.Lock()
	out := slices.Clone(m.journal[taskID])
	m.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out, nil
}

func (m *Memory) PutDevice(_ context.Context, d Device) error {
	d.Data = slices.Clone(d.Data)
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.devices[d.ID]; ok && !d.Connected && old.Server != d.Server {
		return nil
	}
	m.devices[d.ID] = d
	return nil
}

func (m *Memory) DeleteDevice(_ context.Context, id, server string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if d, ok := m.devices[id]; ok && d.Server != server {
		return nil
	}
	delete(m.devices, id)
	return nil
}

func (m *Memory) Device(_ context.Context, id string) (Device, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.devices[id]
	if !ok {
		return Device{}, ErrNotFound
	}
	return d, nil
}

func (m *Memory) Devices(_ context.Context) ([]Device, error) {
	m.mu.Lock()
	out := make([]Device, 0, len(m.devices))
	for _, d := range m.devices {
		out = append(out, d)
	}
	m.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func (m *Memory) Post(_ context.Context, clientID string, frame []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.outbox[clientID] = append(m.outbox[clientID], slices.Clone(frame))
	return nil
}

func (m *Memory) Take(_ context.Context, clientID string) ([][]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := m.outbox[clientID]
	delete(m.outbox, clientID)
	return out, nil
}

func (m *Memory) Close() error { return nil }
