package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/constellation"
)

func init() { commands = append(commands, newConstellationCmd) }

func newConstellationCmd(g *globalFlags) *cobra.Command {
	var serverURL, token string
	cmd := &cobra.Command{
		Use:   "constellation REQUEST",
		Short: "Run one request across the devices of an agent server, planned as a graph of tasks",
		Long: "Ask a running agent server (`saucer serve`) to run REQUEST as a constellation: its constellation agent plans a " +
			"graph of tasks over the connected devices (those config constellation.devices names, or all), runs every ready " +
			"task at once on its device, and re-plans as results arrive. Prints each change as it happens and the answer; " +
			"exit 0 when it completed, 1 when it failed or was cancelled, 2 on bad usage or configuration (a blank REQUEST, " +
			"a server that cannot be reached or refuses the key or the request).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.load()
			if err != nil {
				return err
			}
			return runConstellation(cmd, cfg, serverURL, tokenFrom(token), args[0])
		},
	}
	cmd.Flags().StringVar(&serverURL, "server", "", "the server, as its WebSocket URL or HTTP address (default from config: remote.server)")
	cmd.Flags().StringVar(&token, "token", "", "API key (default: $SAUCER_TOKEN)")
	return cmd
}

// apiBase turns a server's WebSocket URL (ws://HOST:PORT/ws) or address
// into the base of its HTTP API.
func apiBase(s string) (string, error) {
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(strings.Split(s, ",")[0])
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("--server %q is not a server address: give ws://HOST:PORT/ws or HOST:PORT", s)
	}
	switch u.Scheme {
	case "ws":
		u.Scheme = "http"
	case "wss":
		u.Scheme = "https"
	}
	u.Path, u.RawQuery = "", ""
	return u.String(), nil
}

func runConstellation(cmd *cobra.Command, cfg *config.Config, serverURL, token, request string) error {
	if strings.TrimSpace(request) == "" {
		return errors.New("constellation: REQUEST is empty: say what the devices must do, in words")
	}
	if serverURL == "" {
		serverURL = cfg.Remote.Server
	}
	base, err := apiBase(serverURL)
	if err != nil {
		return err
	}
	do := func(method, path string, body []byte) (*http.Response, error) {
		req, err := http.NewRequestWithContext(cmd.Context(), method, base+path, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("X-API-Key", token)
		return http.DefaultClient.Do(req)
	}
	body, _ := json.Marshal(constellation.CreateRequest{Request: request})
	resp, err := do("POST", "/api/constellations", body)
	if err != nil {
		return fmt.Errorf("constellation: the server at %s: %w (is `saucer serve` running?)", base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("constellation: the server said %s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	var g constellation.Graph
	if err := json.NewDecoder(resp.Body).Decode(&g); err != nil {
		return fmt.Errorf("constellation: the server's answer: %w", err)
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "constellation %s\n", g.ID)
	stream, err := do("GET", "/api/constellations/"+g.ID+"/events", nil)
	if err != nil {
		return fmt.Errorf("constellation: following %s: %w", g.ID, err)
	}
	defer stream.Body.Close()
	end, err := followEvents(stream.Body, out)
	if err != nil {
		return fmt.Errorf("constellation %s: %w (GET /api/constellations/%s shows it)", g.ID, err, g.ID)
	}
	fmt.Fprintln(out, end.Summary())
	if end.Status != constellation.Completed {
		// A constellation that failed (or was cancelled) is the run's
		// outcome, not bad usage: exit 1, as a failed run does.
		fmt.Fprintf(cmd.ErrOrStderr(), "saucer: constellation %s %s: %s\n", g.ID, end.Status, end.Error)
		return exitError{1}
	}
	fmt.Fprintln(out, end.Answer)
	return nil
}

// followEvents prints a constellation's events, one line each, and
// returns its graph at its end.
func followEvents(r io.Reader, out io.Writer) (*constellation.Graph, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var e constellation.Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			return nil, fmt.Errorf("an unreadable event: %w", err)
		}
		switch e.Kind {
		case "node_start":
			fmt.Fprintf(out, "  %s started on %s (attempt %d)\n", e.Node, e.Device, e.Attempt)
		case "node_end":
			what := e.Status
			if e.MovedTo != "" {
				what = "moved to " + e.MovedTo + " (device lost)"
			}
			fmt.Fprintf(out, "  %s on %s: %s\n", e.Node, e.Device, what)
		case "planner":
			var ok []string
			var refused []constellation.Edit
			for _, ed := range e.Edits {
				if ed.OK {
					ok = append(ok, ed.Op)
				} else {
					refused = append(refused, ed)
				}
			}
			line := fmt.Sprintf("  planner: %s, %d edit(s) made %v", e.Status, len(ok), ok)
			if len(refused) > 0 {
				line += fmt.Sprintf(", %d refused", len(refused))
			}
			fmt.Fprintln(out, line)
			for _, ed := range refused {
				fmt.Fprintf(out, "    refused %s %s: %s\n", ed.Op, editSubject(ed), ed.Reason)
			}
		case "node_wait":
			fmt.Fprintf(out, "  %s waits for device %s to connect\n", e.Node, e.Device)
		case "end":
			if e.Graph == nil {
				return nil, errors.New("the end event has no graph")
			}
			return e.Graph, nil
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return nil, errors.New("the event stream ended before the constellation")
}

// editSubject names what a planner's edit was about: a node or an edge.
func editSubject(ed constellation.Edit) string {
	if id, ok := ed.Args["id"]; ok {
		return fmt.Sprint(id)
	}
	if from, ok := ed.Args["from"]; ok {
		return fmt.Sprintf("%v→%v", from, ed.Args["to"])
	}
	return ""
}
