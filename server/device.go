package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"sort"
	"time"
	"unsafe"

	"github.com/coder/websocket"

	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/dispatcher"
)

// device is one registered client: a device that runs commands, or a
// constellation that asks for tasks on a target device. Its fields are
// guarded by the server's mu.
type device struct {
	id         string
	clientType aip.ClientType
	targetID   string
	info       command.DeviceInfo
	platform   string
	namespaces map[string]string
	// conn is its connection (nil while away). It is set with its
	// writer held for the registration ack (aip.Conn.Hold): whatever
	// writes to the device finds it here, and waits for the ack.
	conn *aip.Conn
	// instance names the client's run, as its registration says (Saucer's
	// client): the same instance still remembers the command frames it
	// was sent.
	instance string
	// reconnect is the longest its client takes to register again once
	// it can, as it declared (aip.MetaReconnectWithin): its away clock
	// runs AwayTimeout plus this (dispatcher.WebSocket.SetReconnectWait).
	reconnect   time.Duration
	connectedAt time.Time
	awaySince   time.Time
	tasks       int
	// pushed are tasks dispatched to the device that it may echo back as
	// a task request (UFO's clients do); the echo joins the task.
	pushed []*task
	// resumes are restored tasks waiting for the device to come back.
	resumes []*task
	disp    *dispatcher.WebSocket
	srv     *Server
	// tools is what the server knows of its tools (tools.go); asksTools
	// says the device answers a tool listing outside a task (it declared
	// a tool list version), toolsWanted is the version it declared last,
	// probing is the connection a listing is being asked on, probes are the listings'
	// answers awaited, by response id.
	tools       *toolList
	asksTools   bool
	toolsWanted uint64
	probing     *aip.Conn
	probes      map[string]chan *aip.ClientMessage
	// catalogs are a UFO client's tools by agent, asked once per
	// connection (ufo.go).
	catalogs map[string]*ufoCatalog
}

// Send writes to the device's current connection (the dispatcher's Link).
func (d *device) Send(ctx context.Context, m *aip.ServerMessage) error {
	d.srv.mu.Lock()
	conn := d.conn
	d.srv.mu.Unlock()
	if conn == nil {
		return dispatcher.ErrNotConnected
	}
	return conn.Send(ctx, m)
}

// ClientInfo is a registered client as the API shows it.
type ClientInfo struct {
	ClientID     string             `json:"client_id"`
	ClientType   aip.ClientType     `json:"client_type"`
	TargetID     string             `json:"target_id,omitempty"`
	Platform     string             `json:"platform"`
	Status       string             `json:"status"` // connected or away
	ConnectedAt  time.Time          `json:"connected_at"`
	LastSeen     time.Time          `json:"last_seen"`
	RunningTasks int                `json:"running_tasks"`
	Device       command.DeviceInfo `json:"device_info"`
	Namespaces   map[string]string  `json:"namespaces,omitempty"`
	// Tools says how many tools it has and where the server learned
	// them; GET /api/clients/{id}/tools lists them.
	Tools ToolsSummary `json:"tools"`
	// Server is the server holding its connection, when several share
	// one store.
	Server string `json:"server,omitempty"`
}

// Clients lists the registered clients, sorted by id.
func (s *Server) Clients() []ClientInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ClientInfo, 0, len(s.devices))
	for _, d := range s.devices {
		out = append(out, s.clientInfoLocked(d))
	}
	sortClients(out)
	return out
}

// clientInfoLocked is a client as the API shows it. Called with s.mu
// held.
func (s *Server) clientInfoLocked(d *device) ClientInfo {
	ci := ClientInfo{ClientID: d.id, ClientType: d.clientType, TargetID: d.targetID, Platform: d.platform,
		Status: "connected", ConnectedAt: d.connectedAt, RunningTasks: d.tasks, Device: d.info, Namespaces: d.namespaces,
		Tools: d.tools.summary(), Server: s.serverID()}
	if d.conn == nil {
		ci.Status, ci.LastSeen = "away", d.awaySince
	} else {
		ci.LastSeen = d.conn.LastSeen()
	}
	return ci
}

func sortClients(cs []ClientInfo) {
	sort.Slice(cs, func(i, j int) bool { return cs[i].ClientID < cs[j].ClientID })
}

// serveWS authenticates, upgrades, registers, then serves the connection.
func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	if !s.authorize(w, r) {
		return
	}
	s.mu.Lock()
	closing := s.closing
	if !closing {
		s.conns.Add(1)
	}
	s.mu.Unlock()
	if closing {
		http.Error(w, ErrShuttingDown.Error(), http.StatusServiceUnavailable)
		return
	}
	conn, err := aip.Accept(w, r, s.opts.Conn)
	if err != nil {
		s.conns.Done()
		s.logf("websocket upgrade from %s failed: %v", r.RemoteAddr, err)
		return
	}
	// The connection is served from a goroutine of its own, and the
	// handler returns: net/http then lets go of the request, its
	// response and its own state, which an idle device would otherwise
	// hold for as long as it stays connected (a server holds thousands).
	go func() {
		d := s.register(conn)
		if d == nil {
			conn.CloseNow()
			s.conns.Done()
			return
		}
		// The device is read from a fresh goroutine: registration's
		// calls go deep enough to grow this one's stack to 8 KiB (see
		// readDevice).
		conn.Bind(s.ctx)
		go s.readDevice(d, conn)
	}()
}

// readDevice serves a registered connection until it ends, then closes
// and unregisters it. Its goroutine hands over to a fresh one whenever
// handling a frame has grown its stack: Go keeps a grown stack until a
// collection finds less than a quarter of it in use, and a reader
// waiting in coder/websocket uses more than a quarter of 8 KiB, so a
// reader that once grew (a large frame's decoding, an answer written
// through a deep path) would keep 8 KiB for as long as its device stays
// connected; a fresh one waits on 4 KiB. An idle server holds thousands.
func (s *Server) readDevice(d *device, conn *aip.Conn) {
	if s.serveDevice(d, conn) {
		go s.readDevice(d, conn)
		return
	}
	s.disconnect(d, conn)
	// Every way out closes the socket: a connection whose read loop
	// ended (killed peer, over-limit frame) must not keep its fd.
	conn.CloseNow()
	s.conns.Done()
}

// register reads the first frame and registers the client, or refuses it
// with an error frame and closes.
func (s *Server) register(conn *aip.Conn) *device {
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.RegisterTimeout)
	defer cancel()
	text, b, err := conn.Read(ctx)
	if err != nil {
		conn.CloseNow()
		return nil
	}
	refuse := func(msg string) *device {
		s.sendError(conn, msg, "")
		conn.Close(websocket.StatusPolicyViolation, "registration refused")
		return nil
	}
	if !text {
		return refuse("the first frame must be a register frame (JSON text), got a binary frame")
	}
	m, err := aip.DecodeClient(b)
	if err != nil {
		return refuse(err.Error())
	}
	if m.Type != aip.TypeRegister {
		return refuse(fmt.Sprintf("the first frame must be register, got %s", m.Type))
	}
	if err := m.Validate(); err != nil {
		return refuse(err.Error())
	}
	info, platform, namespaces := deviceInfo(m.Metadata)
	resends := aip.ResendsOf(m.Metadata)
	toolsVersion, asksTools := aip.ToolsVersionOf(m.Metadata)
	var released []string
	var instance string // the run of the client another server saw last
	if s.peers != nil && m.ClientType == aip.ClientDevice {
		// The newest server a device registers at holds it: the one
		// before lets go (or refuses, if it is still connected there).
		if released, err = s.letGo(m.ClientID); err != nil {
			return refuse(err.Error())
		}
		if resends != nil && !resends.Journal {
			if rec, ok := s.storedDevice(m.ClientID); ok {
				instance = rec.Instance
			}
		}
	}

	s.mu.Lock()
	d := s.devices[m.ClientID]
	switch {
	case s.closing:
		s.mu.Unlock()
		return refuse(ErrShuttingDown.Error())
	case d != nil && d.conn != nil:
		s.mu.Unlock()
		return refuse(fmt.Sprintf("client_id '%s' is already registered; duplicate registrations are not allowed", m.ClientID))
	case m.ClientType == aip.ClientConstellation && !s.connectedLocked(m.TargetID):
		s.mu.Unlock()
		return refuse(fmt.Sprintf("Target device '%s' is not connected", m.TargetID))
	case d == nil && s.opts.MaxDevices > 0 && len(s.devices) >= s.opts.MaxDevices:
		s.mu.Unlock()
		return refuse(fmt.Sprintf("the server already has %d clients, its limit", s.opts.MaxDevices))
	case d != nil && d.clientType != m.ClientType:
		s.mu.Unlock()
		return refuse(fmt.Sprintf("client_id '%s' was registered as a %s", m.ClientID, d.clientType))
	}
	returning := d != nil
	if !returning {
		d = s.newDevice(m.ClientID, m.ClientType)
		d.instance = instance
		s.devices[m.ClientID] = d
	}
	// The connection is known from here on, with its writer held: the
	// ack is the first frame on it, whoever sends to the device next.
	ack := conn.Hold()
	// A frame it was sent before is answered from its memory if it keeps
	// a journal, or if it is the same run of the client as before.
	dedupes := resends != nil && (resends.Journal || (resends.Instance != "" && resends.Instance == d.instance))
	d.instance = ""
	if resends != nil {
		d.instance = resends.Instance
	}
	d.conn, d.connectedAt, d.targetID = conn, time.Now(), m.TargetID
	if !isZero(info) || d.platform == "" {
		d.info, d.platform = info, platform
	}
	if namespaces != nil {
		d.namespaces = namespaces
	}
	d.asksTools = asksTools
	if m.ClientType == aip.ClientDevice {
		d.reconnect = aip.ReconnectWithinOf(m.Metadata)
		d.disp.SetReconnectWait(d.reconnect)
	}
	resumes := d.resumes
	d.resumes = nil
	s.mu.Unlock()
	s.putDevice(d)
	s.publishClient(d)

	if err := ack(s.ack("")); err != nil {
		s.mu.Lock()
		d.resumes = append(resumes, d.resumes...)
		s.mu.Unlock()
		return d // the read loop sees the broken connection and unregisters
	}
	s.sendQueued(d, conn)
	if asksTools {
		s.askTools(d, conn, toolsVersion)
	} else {
		s.listUFOTools(d)
	}
	// Rounds that waited for it go out, or end unknown when it would run
	// a frame it may have run before.
	d.disp.Connected(s.ctx, dedupes)
	if returning {
		s.logf("%s %s is back", d.clientType, d.id)
	} else {
		s.logf("%s %s registered (%s)", d.clientType, d.id, platform)
	}
	for _, t := range resumes {
		s.start(t)
	}
	if s.peers != nil && d.clientType == aip.ClientDevice {
		s.adoptOrphans(released, d)
	}
	return d
}

func isZero(i command.DeviceInfo) bool {
	return i.Platform == "" && i.Hostname == "" && i.CPUCount == 0
}

// deviceInfo reads registration metadata: system_info, platform (UFO
// assumes windows when it is missing) and Saucer's namespaces.
func deviceInfo(meta map[string]any) (command.DeviceInfo, string, map[string]string) {
	var info command.DeviceInfo
	if si, ok := meta["system_info"]; ok {
		if b, err := json.Marshal(si); err == nil {
			json.Unmarshal(b, &info)
		}
	}
	platform, _ := meta["platform"].(string)
	if platform == "" {
		platform = info.Platform
	}
	if platform == "" {
		platform = "windows"
	}
	var namespaces map[string]string
	if list, ok := meta["namespaces"].([]any); ok {
		namespaces = map[string]string{}
		for _, e := range list {
			if ns, ok := e.(map[string]any); ok {
				name, _ := ns["name"].(string)
				desc, _ := ns["description"].(string)
				if name != "" {
					namespaces[name] = desc
				}
			}
		}
	}
	return info, platform, namespaces
}

func (s *Server) connectedLocked(id string) bool {
	d := s.devices[id]
	return d != nil && d.conn != nil && d.clientType == aip.ClientDevice
}

// disconnect unregisters a connection. A device with work in flight (a
// running task, a round waiting for results) stays registered as away for
// AwayTimeout, so that it can come back and deliver.
func (s *Server) disconnect(d *device, conn *aip.Conn) {
	s.mu.Lock()
	if d.conn != conn {
		s.mu.Unlock()
		return
	}
	s.disconnectLocked(d, conn)
	stays := s.devices[d.id] == d
	s.mu.Unlock()
	s.publishClient(d)
	if s.peers != nil && stays {
		// Other servers stop sending its API calls here.
		s.putDevice(d)
	}
}

func (s *Server) disconnectLocked(d *device, conn *aip.Conn) {
	d.conn, d.awaySince = nil, time.Now()
	d.disp.Disconnected(s.ctx)
	switch {
	case s.closing:
		// The server stops: the device stays in the store, away, for the
		// next server on it (with the run of its client, see register).
		s.logf("%s %s disconnected as the server stops", d.clientType, d.id)
		return
	case d.tasks == 0 && d.disp.Waiting() == 0:
		delete(s.devices, d.id)
		s.logf("%s %s disconnected (%v)", d.clientType, d.id, context.Cause(conn.Context()))
		go s.forgetDevice(d)
		return
	}
	s.logf("%s %s disconnected with work in flight (%v); waiting %s for it to come back", d.clientType, d.id,
		context.Cause(conn.Context()), d.disp.AwayFor())
}

// abandon gives up on a device that has been away for AwayTimeout plus
// its reconnection wait (its dispatcher's away clock ran out): its running
// tasks end failed with the reason, and so do restored tasks that waited
// for it; it leaves the registry once they have ended. Their task_end
// frames, sent when it comes back, tell it to stop their commands still
// running (aip.ResultStopCommands): their work may be done elsewhere by
// then.
func (s *Server) abandon(d *device) {
	s.mu.Lock()
	// A server that is stopping leaves its tasks to the next one (and its
	// store may be closed).
	if d.conn != nil || s.devices[d.id] != d || s.closing || s.ctx.Err() != nil {
		s.mu.Unlock()
		return
	}
	waiting := d.resumes
	d.resumes = nil
	var running []*task
	for _, t := range s.tasks {
		if t.target == d && !t.ended() && !slices.Contains(waiting, t) {
			running = append(running, t)
		}
	}
	s.mu.Unlock()
	gone := fmt.Errorf("device %s did not come back within %s", d.id, d.disp.AwayFor())
	for _, t := range append(slices.Clone(running), waiting...) {
		t.mu.Lock()
		t.stopCommands = true
		t.mu.Unlock()
	}
	for _, t := range running {
		s.endTask(t, StatusFailed, gone)
	}
	what := "the server restarted during this task"
	if s.peers != nil {
		what = "the server running this task went away"
	}
	for _, t := range waiting {
		t.mu.Lock()
		t.endStatus, t.endCause = StatusFailed, fmt.Errorf("%s and %w", what, gone)
		t.mu.Unlock()
		s.endUnstarted(t)
	}
	s.forgetIfGone(d)
}

// forgetIfGone removes a device whose away clock ran out from the
// registry and the store once it runs no task.
func (s *Server) forgetIfGone(d *device) {
	s.mu.Lock()
	gone := d.conn == nil && s.devices[d.id] == d && d.tasks == 0 && d.disp.Gone()
	if gone {
		delete(s.devices, d.id)
	}
	s.mu.Unlock()
	if gone {
		s.logf("%s %s did not come back within %s; forgotten", d.clientType, d.id, d.disp.AwayFor())
		s.deleteDevice(d.id)
		s.publishClient(d)
	}
}

// forgetDevice removes a device that left from the store, unless it has
// registered again meanwhile.
func (s *Server) forgetDevice(d *device) {
	s.mu.Lock()
	back := s.devices[d.id] != nil
	s.mu.Unlock()
	if !back {
		s.deleteDevice(d.id)
	}
}

// serveDevice reads frames until the connection ends (false), or until
// the goroutine's stack has grown while it handled one (true: see
// readDevice). Frames it cannot handle get an error reply; the
// connection stays up.
func (s *Server) serveDevice(d *device, conn *aip.Conn) (grown bool) {
	// A stack that grows is copied elsewhere: mark's address changes.
	// The first read grows a fresh goroutine's stack to what waiting
	// takes, so the address is noted after it.
	var mark byte
	var at uintptr
	for {
		var text bool
		var m *aip.ClientMessage
		var err error
		// Decoded from the connection's buffer: the message keeps copies.
		if conn.ReadFunc(s.ctx, func(t bool, b []byte) {
			if text = t; t {
				m, err = aip.DecodeClient(b)
			}
		}) != nil {
			return false
		}
		if at == 0 {
			at = uintptr(unsafe.Pointer(&mark))
		}
		s.serveFrame(d, conn, text, m, err)
		if uintptr(unsafe.Pointer(&mark)) != at {
			return true
		}
	}
}

// serveFrame handles one frame a device sent, decoded into m (or not, as
// err says).
func (s *Server) serveFrame(d *device, conn *aip.Conn, text bool, m *aip.ClientMessage, err error) {
	if !text {
		s.sendError(conn, "binary frames are only used for file transfer, which this server does not accept", "")
		return
	}
	if err == nil {
		err = m.Validate()
	}
	if err != nil {
		s.sendError(conn, err.Error(), "")
		return
	}
	if msg := s.checkIdentity(d, m); msg != "" {
		s.sendError(conn, msg, m.SessionID)
		return
	}
	s.handle(d, conn, m)
}

// checkIdentity enforces the identity pinned at registration.
func (s *Server) checkIdentity(d *device, m *aip.ClientMessage) string {
	switch {
	case m.ClientID != "" && m.ClientID != d.id:
		return "client_id does not match the registered connection"
	case m.ClientType != d.clientType:
		return "client_type does not match the registered connection"
	case d.clientType == aip.ClientDevice && m.TargetID != "" && m.TargetID != d.id:
		return "a device may not target another device"
	case m.Type == aip.TypeRegister:
		return "this connection is already registered"
	}
	return ""
}

func (s *Server) handle(d *device, conn *aip.Conn, m *aip.ClientMessage) {
	switch m.Type {
	case aip.TypeHeartbeat:
		if m.Progress != nil {
			d.disp.Progress(m.Progress)
		}
		if v, ok := aip.ToolsVersionOf(m.Metadata); ok {
			s.mu.Lock()
			stale := d.asksTools && (d.tools == nil || d.tools.Version != v) && d.toolsWanted != v
			s.mu.Unlock()
			if stale {
				s.askTools(d, conn, v)
			}
		}
		conn.Send(s.ctx, s.ack(""))
	case aip.TypeCommandResults:
		if s.probeAnswer(d, m) {
			return
		}
		if err := d.disp.Deliver(m); err != nil {
			if errors.Is(err, dispatcher.ErrDuplicateResults) {
				s.logf("%s: dropped a duplicate: %v", d.id, err)
				return
			}
			s.sendError(conn, fmt.Sprintf("command_results not accepted: %v", err), m.SessionID)
			return
		}
		// The round these results answer is ready to run: let it run
		// now, on this processor, and go back to reading from wherever
		// the scheduler puts this goroutine next (the processor Go has
		// just woken for the round, as a rule). Reading on first put
		// this goroutine's way back into its read (a read that finds
		// nothing, then a park) between the results and the round that
		// waits for them: a twentieth of a loopback round trip
		// (BenchmarkRoundTrip).
		runtime.Gosched()
	default:
		s.handleRare(d, conn, m)
	}
}

// handleRare handles the frames other than heartbeats and results. It is
// apart from handle so that handle's stack frame stays small: handle runs
// on each device's reader, and a heartbeat's answer, written from there,
// must fit in the 4 KiB stack an idle reader keeps (a larger frame here
// grew every reader to 8 KiB).
func (s *Server) handleRare(d *device, conn *aip.Conn, m *aip.ClientMessage) {
	switch m.Type {
	case aip.TypeTask:
		s.taskRequest(d, conn, m)
	case aip.TypeDeviceInfoRequest:
		s.deviceInfoRequest(d, conn, m)
	case aip.TypeDeviceInfoResponse:
		if m.Metadata != nil {
			info, _, _ := deviceInfo(map[string]any{"system_info": m.Metadata})
			s.mu.Lock()
			d.info = info
			s.mu.Unlock()
		}
	case aip.TypeTaskEnd:
		s.logf("%s acknowledged the end of session %s", d.id, m.SessionID)
	case aip.TypeError:
		// As UFO: an error frame is logged and answered with one.
		s.logf("%s reports an error: %s", d.id, m.Error)
		s.sendError(conn, "error received: "+m.Error, m.SessionID)
	}
}

// deviceInfoRequest answers a constellation's question about its device.
func (s *Server) deviceInfoRequest(d *device, conn *aip.Conn, m *aip.ClientMessage) {
	// As UFO: only a constellation asks, and only about the device it
	// registered for.
	if d.clientType != aip.ClientConstellation {
		s.sendError(conn, "device information is answered to constellation clients only", "")
		return
	}
	target := m.TargetID
	if target == "" {
		target = d.targetID
	}
	if target != d.targetID {
		s.sendError(conn, fmt.Sprintf("this constellation registered for device '%s' and may not ask about '%s'", d.targetID, target), "")
		return
	}
	s.mu.Lock()
	td := s.devices[target]
	var info command.DeviceInfo
	if td != nil {
		info = td.info
	}
	s.mu.Unlock()
	if td == nil {
		s.sendError(conn, fmt.Sprintf("device '%s' is not registered", target), "")
		return
	}
	b, _ := json.Marshal(info)
	conn.Send(s.ctx, &aip.ServerMessage{Type: aip.TypeDeviceInfoResponse, Status: aip.StatusOK, ResponseID: m.RequestID,
		Timestamp: aip.Timestamp(time.Now()), Result: b})
}

// ack is the heartbeat/ok frame that answers register, heartbeats and task
// requests (with the session id).
func (s *Server) ack(sessionID string) *aip.ServerMessage {
	return &aip.ServerMessage{Type: aip.TypeHeartbeat, Status: aip.StatusOK, SessionID: sessionID,
		ResponseID: s.opts.NewID(), Timestamp: aip.Timestamp(time.Now())}
}

func (s *Server) sendError(conn *aip.Conn, msg, sessionID string) {
	conn.Send(s.ctx, &aip.ServerMessage{Type: aip.TypeError, Status: aip.StatusError, Error: msg, SessionID: sessionID,
		ResponseID: s.opts.NewID(), Timestamp: aip.Timestamp(time.Now())})
}

// ufoAgents is the agent of UFO's device client that runs the command
// frames UFO's server sends to a device of each platform (the agent_name
// it routes them by, an entry of the client's mcp.yaml). "" for windows:
// the agent that asks, HostAgent or AppAgent, as Saucer's agents are.
var ufoAgents = map[string]string{"windows": "", "linux": "LinuxAgent", "mobile": "MobileAgent"}

// agentNameLocked is the agent_name of the command frames sent to d: its
// entry in Options.DeviceAgents, else "" (the agent that asks) for
// Saucer's client, which runs a frame whatever it names, else the agent
// UFO's server uses for the platform d registered with. Called with s.mu
// held.
func (s *Server) agentNameLocked(d *device) (string, error) {
	if name, ok := s.opts.DeviceAgents[d.id]; ok {
		return name, nil
	}
	if d.instance != "" || d.namespaces != nil { // registered as Saucer's client does
		return "", nil
	}
	if name, ok := ufoAgents[d.platform]; ok {
		return name, nil
	}
	return "", fmt.Errorf("%w: device %s registered as a UFO client on platform %q, and UFO's client names no agent for it "+
		"(windows, linux and mobile have one): set remote.device_agents.%s to the agent of its mcp.yaml that should run Saucer's commands",
		ErrBadRequest, d.id, d.platform, d.id)
}
