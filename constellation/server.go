package constellation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/server"
)

// ServerDevices runs nodes as tasks on the devices connected to an agent
// server in this process, through the server's own task path (as POST
// /api/dispatch does): each node is a task with its journal, its record
// and its end, and survives a restart of the server as tasks do. When the
// server is one of a cluster, the devices the other live servers hold
// are its devices too: a node for one of them is dispatched to the
// server that holds it, through the store (the way the cluster passes on
// POST /api/dispatch), runs and is journaled there, and is followed there
// until it ends, also if its device moves to another server meanwhile.
type ServerDevices struct {
	Server *server.Server
}

var _ Devices = ServerDevices{}

// List returns the connected devices, with their apps: the namespaces
// they registered and those their listed tools are in (UFO's client
// registers none: its apps are its agent's MCP servers).
func (d ServerDevices) List(context.Context) ([]Device, error) {
	var out []Device
	for _, c := range d.Server.ClusterClients() {
		if c.ClientType != aip.ClientDevice || c.Status != "connected" {
			continue
		}
		dev := Device{ID: c.ClientID, Platform: c.Platform, Apps: slices.Clone(c.Tools.Namespaces),
			Sandbox: c.Device.Sandbox, Labels: slices.Clone(c.Device.Labels)}
		for ns := range c.Namespaces {
			dev.Apps = append(dev.Apps, ns)
		}
		if dev.Apps == nil {
			dev.Apps = []string{}
		}
		slices.Sort(dev.Apps)
		dev.Apps = slices.Compact(dev.Apps)
		out = append(out, dev)
	}
	return out, nil
}

// Start dispatches the task under the name key, or finds the task a
// first Start (before a restart) dispatched under it.
func (d ServerDevices) Start(ctx context.Context, device, key, task string) (string, error) {
	if t, ok := d.Server.FindTask(device, key); ok {
		return t.ID, nil
	}
	info, err := d.Server.DispatchAnywhere(ctx, device, task, key, "constellation")
	// A busy device (a task of its own, or the node before this one still
	// freeing its slot, which the server does a moment after the task's
	// end) is waited for: the node is queued, not failed.
	for wait := 10 * time.Millisecond; errors.Is(err, server.ErrBusy); wait = min(2*wait, time.Second) {
		select {
		case <-ctx.Done():
			return "", context.Cause(ctx)
		case <-time.After(wait):
		}
		info, err = d.Server.DispatchAnywhere(ctx, device, task, key, "constellation")
	}
	if errors.Is(err, server.ErrNoDevice) {
		return "", fmt.Errorf("%w: %v", ErrDeviceGone, err)
	}
	if err != nil {
		return "", err
	}
	return info.ID, nil
}

// Cancel cancels a task of this server's (a node of a constellation that
// ended while it ran).
func (d ServerDevices) Cancel(_ context.Context, id string) error {
	_, err := d.Server.Cancel(id, "constellation")
	return err
}

var _ Canceller = ServerDevices{}

// Wait waits for the task to end. A failed task whose device is no
// longer connected counts as a lost device.
func (d ServerDevices) Wait(ctx context.Context, id string) (TaskOutcome, error) {
	info, err := d.Server.WaitAnywhere(ctx, id)
	if err != nil {
		return TaskOutcome{}, err
	}
	if info.Status == server.StatusRunning {
		return TaskOutcome{}, fmt.Errorf("task %s did not end here: %w", id, context.Cause(ctx))
	}
	rec, _ := json.Marshal(info)
	out := TaskOutcome{OK: info.Status == server.StatusCompleted, Result: info.Result, Error: info.Error, Record: rec}
	if !out.OK {
		devs, _ := d.List(ctx)
		out.DeviceLost = !slices.ContainsFunc(devs, func(x Device) bool { return x.ID == info.ClientID })
	}
	return out, nil
}
