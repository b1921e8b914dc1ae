package server

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A person logs in to the console with the server's API key, once: the
// server answers with a session cookie (http-only, SameSite=Strict,
// Secure over TLS) that the API then takes in place of the key. Programs
// keep sending the key (X-API-Key or ?token=).
//
// The cookie is signed with a key derived from the API key, so every
// server that shares the key (several on one PostgreSQL) accepts it, and
// changing the key ends every session. A request authenticated by the
// cookie that changes anything (any method but GET and HEAD) must also
// carry the session's CSRF token in the X-CSRF-Token header (the page's
// script has it from POST /api/login or GET /api/session; another site's
// page cannot read it) and, if the browser says where it comes from
// (Origin), come from this server's own origin.

// SessionCookie is the console's session cookie.
const SessionCookie = "saucer_session"

// DefaultSessionTTL is how long a console login lasts.
const DefaultSessionTTL = 12 * time.Hour

// maxLoginBody bounds the body of POST /api/login.
const maxLoginBody = 1 << 16

// Login is the body of POST /api/login.
type Login struct {
	Key string `json:"key"`
}

// ConsoleSession answers POST /api/login and GET /api/session: the token
// to send as X-CSRF-Token with every request that changes something.
type ConsoleSession struct {
	CSRF      string    `json:"csrf"`
	ExpiresAt time.Time `json:"expires_at"`
	// Open says the server takes no key at all (no login needed).
	Open bool `json:"open,omitempty"`
	// As is the name the server records this session's tasks, answers
	// and cancels under (Options.KeyLabel): the page says "you" for it.
	As string `json:"as,omitempty"`
}

// consoleRoutes adds the console's API: login and session, the event
// streams, screenshots, recorded runs and eval reports.
func (s *Server) consoleRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /api/login", s.login)
	mux.HandleFunc("GET /api/session", s.session)
	mux.HandleFunc("POST /api/logout", s.authed(s.logout))
	mux.HandleFunc("GET /api/events", s.authed(s.serverEvents))
	mux.HandleFunc("GET /api/tasks/{id}/events", s.authed(s.taskEvents))
	mux.HandleFunc("GET /api/tasks/{id}/screenshots/{sha}", s.authed(s.screenshot))
	mux.HandleFunc("GET /api/runs", s.authed(s.listRuns))
	mux.HandleFunc("GET /api/runs/{id}", s.authed(s.getRun))
	mux.HandleFunc("GET /api/runs/{id}/artifacts/{name}", s.authed(s.runArtifact))
	mux.HandleFunc("POST /api/runs/{id}/replay", s.authed(s.replayRun))
	mux.HandleFunc("GET /api/evals", s.authed(s.listEvals))
	mux.HandleFunc("GET /api/evals/compare", s.authed(s.compareEvals))
	mux.HandleFunc("GET /api/evals/{name}/{file}", s.authed(s.evalFile))
}

// authenticate lets a request through with the API key, or with a valid
// console session (and, for a change, its CSRF token from this origin);
// otherwise it answers 401 or 403 and returns false.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) bool {
	if s.opts.Token == "" {
		return true
	}
	if r.URL.Query().Get("token") != "" || r.Header.Get("X-API-Key") != "" {
		return s.authorize(w, r)
	}
	c, err := r.Cookie(SessionCookie)
	if err != nil {
		return s.authorize(w, r) // says the key is missing
	}
	payload, ok := s.verifySession(c.Value)
	if !ok {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "the console session has expired or is not valid: log in again with the server's key"})
		return false
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	if why := s.crossSite(r); why != "" {
		writeJSON(w, http.StatusForbidden, map[string]string{"error": "refused: " + why})
		return false
	}
	if got := r.Header.Get("X-CSRF-Token"); subtle.ConstantTimeCompare([]byte(got), []byte(s.csrfOf(payload))) != 1 {
		writeJSON(w, http.StatusForbidden, map[string]string{"error": "refused: the request lacks the session's CSRF token (X-CSRF-Token); reload the console"})
		return false
	}
	return true
}

// Authenticate checks a request as the server's own API does: the API
// key, or a console session (and, for a change, its CSRF token from this
// origin). Otherwise it answers 401 or 403 and returns false. Handlers
// served beside the server's (the constellations') use it, so that the
// console reaches them too.
func (s *Server) Authenticate(w http.ResponseWriter, r *http.Request) bool {
	return s.authenticate(w, r)
}

// crossSite says why a request that changes something does not come from
// this server's own pages, or "".
func (s *Server) crossSite(r *http.Request) string {
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return "the request comes from another site"
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return ""
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return fmt.Sprintf("the request's Origin %q is not this server's", origin)
	}
	hosts := []string{r.Host}
	if fh := r.Header.Get("X-Forwarded-Host"); fh != "" {
		hosts = append(hosts, strings.TrimSpace(strings.Split(fh, ",")[0]))
	}
	for _, h := range hosts {
		if strings.EqualFold(u.Host, h) {
			return ""
		}
	}
	return fmt.Sprintf("the request's Origin %s is not this server's (%s); behind a proxy, pass the Host header or X-Forwarded-Host", origin, r.Host)
}

// sessionKey signs sessions: derived from the API key.
func (s *Server) sessionKey() []byte {
	m := hmac.New(sha256.New, []byte(s.opts.Token))
	m.Write([]byte("saucer console session v1"))
	return m.Sum(nil)
}

func (s *Server) sign(payload string) string {
	m := hmac.New(sha256.New, s.sessionKey())
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// newSession makes a session cookie's value: an expiry and a random id,
// signed.
func (s *Server) newSession(expires time.Time) (value, payload string) {
	var id [16]byte
	rand.Read(id[:])
	payload = strconv.FormatInt(expires.Unix(), 10) + "." + hex.EncodeToString(id[:])
	return payload + "." + s.sign(payload), payload
}

// verifySession checks a cookie's signature and expiry and returns its
// payload.
func (s *Server) verifySession(value string) (string, bool) {
	i := strings.LastIndexByte(value, '.')
	if i < 0 {
		return "", false
	}
	payload, sig := value[:i], value[i+1:]
	if subtle.ConstantTimeCompare([]byte(sig), []byte(s.sign(payload))) != 1 {
		return "", false
	}
	exp, _, _ := strings.Cut(payload, ".")
	unix, err := strconv.ParseInt(exp, 10, 64)
	if err != nil || time.Now().Unix() >= unix {
		return "", false
	}
	return payload, true
}

// csrfOf is a session's CSRF token.
func (s *Server) csrfOf(payload string) string { return s.sign("csrf." + payload) }

func (s *Server) sessionTTL() time.Duration {
	if s.opts.SessionTTL > 0 {
		return s.opts.SessionTTL
	}
	return DefaultSessionTTL
}

// secure reports a request that came over TLS, here or at a proxy.
func secure(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// login answers POST /api/login: the right key gets a session cookie; a
// wrong one is refused, and too many from one address wait.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if s.opts.Token == "" {
		writeJSON(w, http.StatusOK, ConsoleSession{Open: true, As: s.queuedBy()})
		return
	}
	if why := s.crossSite(r); why != "" {
		writeJSON(w, http.StatusForbidden, map[string]string{"error": "refused: " + why})
		return
	}
	ip := clientIP(r)
	if wait := s.logins.wait(ip); wait > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds()+1)))
		writeJSON(w, http.StatusTooManyRequests, map[string]string{"error": fmt.Sprintf("too many wrong keys from this address: try again in %d s", int(wait.Seconds()+1))})
		return
	}
	var l Login
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		body, ok := ReadBody(w, r, maxLoginBody)
		if !ok {
			return
		}
		form, err := url.ParseQuery(string(body))
		if err != nil {
			writeError(w, fmt.Errorf("%w: the form could not be read (%v): send key=...", ErrBadRequest, err))
			return
		}
		l.Key = form.Get("key")
	} else if !DecodeBody(w, r, maxLoginBody, &l, `{"key": "..."}`) {
		return
	}
	if l.Key == "" {
		writeError(w, fmt.Errorf("%w: no key given: enter the server's API key (its --token, or SAUCER_TOKEN)", ErrBadRequest))
		return
	}
	if subtle.ConstantTimeCompare([]byte(l.Key), []byte(s.opts.Token)) != 1 {
		s.logins.fail(ip)
		s.logf("console: a wrong key was given from %s", ip)
		writeJSON(w, http.StatusForbidden, map[string]string{"error": "wrong key: the console takes the server's API key (its --token, or SAUCER_TOKEN)"})
		return
	}
	expires := time.Now().Add(s.sessionTTL()).Truncate(time.Second)
	value, payload := s.newSession(expires)
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: value, Path: "/", Expires: expires, MaxAge: int(time.Until(expires).Seconds()),
		HttpOnly: true, Secure: secure(r), SameSite: http.SameSiteStrictMode})
	writeJSON(w, http.StatusOK, ConsoleSession{CSRF: s.csrfOf(payload), ExpiresAt: expires.UTC(), As: s.queuedBy()})
}

// session answers GET /api/session: the logged-in console's CSRF token,
// or 401.
func (s *Server) session(w http.ResponseWriter, r *http.Request) {
	if s.opts.Token == "" {
		writeJSON(w, http.StatusOK, ConsoleSession{Open: true, As: s.queuedBy()})
		return
	}
	c, err := r.Cookie(SessionCookie)
	if err != nil {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "not logged in"})
		return
	}
	payload, ok := s.verifySession(c.Value)
	if !ok {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "the console session has expired: log in again"})
		return
	}
	exp, _, _ := strings.Cut(payload, ".")
	unix, _ := strconv.ParseInt(exp, 10, 64)
	writeJSON(w, http.StatusOK, ConsoleSession{CSRF: s.csrfOf(payload), ExpiresAt: time.Unix(unix, 0).UTC(), As: s.queuedBy()})
}

// logout answers POST /api/logout: the browser forgets its cookie.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: secure(r),
		SameSite: http.SameSiteStrictMode})
	writeJSON(w, http.StatusOK, map[string]string{"status": "logged out"})
}

// clientIP is the address a request came from (the proxy's, behind one).
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// Login attempts: an address may give loginBurst wrong keys, then one
// every loginEvery.
const (
	loginBurst   = 5
	loginEvery   = 12 * time.Second
	loginClients = 10000 // addresses remembered
)

// loginLimiter counts wrong keys per address (a leaky bucket).
type loginLimiter struct {
	mu   sync.Mutex
	full map[string]time.Time // when the address's bucket is empty again
}

func newLoginLimiter() *loginLimiter { return &loginLimiter{full: map[string]time.Time{}} }

// wait is how long ip must wait before its next attempt.
func (l *loginLimiter) wait(ip string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	full, ok := l.full[ip]
	if !ok {
		return 0
	}
	return max(time.Until(full)-(loginBurst-1)*loginEvery, 0)
}

// fail counts a wrong key from ip.
func (l *loginLimiter) fail(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if len(l.full) >= loginClients {
		for k, t := range l.full {
			if t.Before(now) {
				delete(l.full, k)
			}
		}
		if len(l.full) >= loginClients {
			clear(l.full)
		}
	}
	from := l.full[ip]
	if from.Before(now) {
		from = now
	}
	l.full[ip] = from.Add(loginEvery)
}
