package constellation

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/server/store"
)

// TestAPIRefusalsSayWhatIsWrong: every refusal of the constellation API
// is a JSON error that says what was wrong (a missing or blank request,
// a body that is not JSON, one over the limit, a missing or wrong key),
// with the status that fits, and starts nothing.
func TestAPIRefusalsSayWhatIsWrong(t *testing.T) {
	sc := loadSuite(t)[0]
	c := newCluster(t, store.NewMemory(), 0, "linux1")
	o := c.orchestrator(t, plannerFor(t, sc, 0), Options{})
	hs := httptest.NewServer(Handler(o, suiteToken, c.srv.Handler()))
	defer hs.Close()
	huge := `{"request":"` + strings.Repeat("x", 1<<20) + `"}`
	for _, tc := range []struct {
		name, body, key string
		want            int
		says            string
	}{
		{"empty request", `{"request":""}`, suiteToken, http.StatusBadRequest, `the request is empty: send {"request"`},
		{"blank request", `{"request":" \n\t "}`, suiteToken, http.StatusBadRequest, "the request is empty"},
		{"no request", `{"ask":"x"}`, suiteToken, http.StatusBadRequest, "the request is empty"},
		{"not JSON", `request=x`, suiteToken, http.StatusBadRequest, `the body must be JSON {"request"`},
		{"no body", ``, suiteToken, http.StatusBadRequest, "the body is empty"},
		{"too large", huge, suiteToken, http.StatusRequestEntityTooLarge, "larger than 1 MiB"},
		{"no key", `{"request":"x"}`, "", http.StatusUnauthorized, "missing API key"},
		{"wrong key", `{"request":"x"}`, "wrong", http.StatusForbidden, "invalid API key"},
	} {
		req, _ := http.NewRequest("POST", hs.URL+"/api/constellations", strings.NewReader(tc.body))
		if tc.key != "" {
			req.Header.Set("X-API-Key", tc.key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e struct {
			Error string `json:"error"`
		}
		json.Unmarshal(b, &e)
		if resp.StatusCode != tc.want || !strings.Contains(e.Error, tc.says) || strings.Contains(e.Error, "<nil>") ||
			!strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			t.Errorf("%s: %d %s %q; want %d, a JSON error saying %q", tc.name, resp.StatusCode, resp.Header.Get("Content-Type"), b, tc.want, tc.says)
		}
	}
	if gs, err := o.List(t.Context()); err != nil || len(gs) != 0 {
		t.Errorf("refused requests started constellations: %d (%v)", len(gs), err)
	}
}
