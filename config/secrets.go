package config

import (
	"net/url"
	"strings"
)

// SecretName reports whether an environment variable or header of this
// name holds a credential: *_API_KEY, *_KEY, *_TOKEN, *_SECRET,
// *_PASSWORD, *_PASS, *_PASSWD, *_CREDENTIALS, *_ACCESS_KEY_ID, anything
// with SECRET, PASSWORD or TOKEN in it, and Authorization and Cookie.
func SecretName(name string) bool {
	n := strings.ToUpper(strings.TrimSpace(name))
	switch n {
	case "AUTHORIZATION", "PROXY-AUTHORIZATION", "COOKIE", "X-API-KEY", "API_KEY", "APIKEY", "TOKEN", "PASSWORD":
		return true
	}
	for _, s := range []string{"_KEY", "_TOKEN", "_SECRET", "_PASSWORD", "_PASS", "_PASSWD", "_CREDENTIALS", "_ACCESS_KEY_ID", "-KEY", "-TOKEN"} {
		if strings.HasSuffix(n, s) {
			return true
		}
	}
	for _, s := range []string{"SECRET", "PASSWORD", "TOKEN"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// URLPassword is the password in a URL's user info
// (postgres://user:PASSWORD@host/db), or "".
func URLPassword(s string) string {
	if !strings.Contains(s, "://") || !strings.Contains(s, "@") {
		return ""
	}
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || u.User == nil {
		return ""
	}
	p, _ := u.User.Password()
	return p
}

// redactURL hides a URL's password and the values of its query
// parameters that name a credential (?token=, as UFO's servers take their
// key, ?api_key=, ...: see SecretName), keeping the rest readable.
// RedactURL is s with its password and its credential query parameters
// (token=, api_key=, ...) replaced by [redacted], for what logs and
// errors repeat of a URL.
func RedactURL(s string) string { return redactURL(s) }

func redactURL(s string) string {
	if p := URLPassword(s); p != "" {
		s = strings.Replace(s, ":"+p+"@", ":[redacted]@", 1)
	}
	base, query, ok := strings.Cut(s, "?")
	if !ok {
		return s
	}
	query, frag, hasFrag := strings.Cut(query, "#")
	kvs := strings.Split(query, "&")
	for i, kv := range kvs {
		if k, v, _ := strings.Cut(kv, "="); v != "" && SecretName(k) {
			kvs[i] = k + "=[redacted]"
		}
	}
	s = base + "?" + strings.Join(kvs, "&")
	if hasFrag {
		s += "#" + frag
	}
	return s
}

// secretsOfMap lists the values of a header or environment map that are
// credentials: every value of a secret name, and URL passwords anywhere.
func secretsOfMap(m map[string]string, allValues bool) []string {
	var out []string
	for k, v := range m {
		if allValues || SecretName(k) {
			out = append(out, v)
		}
		if p := URLPassword(v); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// redactMap returns m with credentials hidden: every value when allValues
// (headers), else the values of secret names; URL passwords always.
func redactMap(m map[string]string, allValues bool) map[string]string {
	if len(m) == 0 {
		return m
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		switch {
		case allValues || SecretName(k):
			out[k] = "[redacted]"
		default:
			out[k] = redactURL(v)
		}
	}
	return out
}
