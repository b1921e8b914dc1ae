package aip

import (
	"errors"
	"net/url"
	"strings"
)

// TokenParam is the query parameter UFO's server reads its API key from
// (/ws?token=KEY).
const TokenParam = "token"

// WithToken is rawURL with token in its TokenParam query parameter (a URL
// that does not parse is returned as it is).
func WithToken(rawURL, token string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL
	}
	q := u.Query()
	q.Set(TokenParam, token)
	u.RawQuery = q.Encode()
	return u.String()
}

// redacted stands for a token in what is shown.
const redacted = "REDACTED"

// RedactURL is rawURL as it may be shown: the value of its token
// parameter, if any, replaced.
func RedactURL(rawURL string) string {
	base, query, ok := strings.Cut(rawURL, "?")
	if !ok {
		return rawURL
	}
	query, frag, hasFrag := strings.Cut(query, "#")
	kvs := strings.Split(query, "&")
	for i, kv := range kvs {
		if k, v, _ := strings.Cut(kv, "="); k == TokenParam && v != "" {
			kvs[i] = k + "=" + redacted
		}
	}
	out := base + "?" + strings.Join(kvs, "&")
	if hasFrag {
		out += "#" + frag
	}
	return out
}

// tokens are the token values in rawURL's query, as written there and
// decoded, longest first.
func tokens(rawURL string) []string {
	_, query, ok := strings.Cut(rawURL, "?")
	if !ok {
		return nil
	}
	query, _, _ = strings.Cut(query, "#")
	var out []string
	for _, kv := range strings.Split(query, "&") {
		k, v, _ := strings.Cut(kv, "=")
		if k != TokenParam || v == "" {
			continue
		}
		out = append(out, v)
		if dec, err := url.QueryUnescape(v); err == nil && dec != v && dec != "" {
			out = append(out, dec)
		}
	}
	// A longer form first, so that a shorter one inside it does not
	// leave part of it behind.
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if len(out[j]) > len(out[i]) {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// redactError hides rawURL's token in err's message. The result matches
// what err matches (errors.Is, errors.As) but does not unwrap to it: the
// errors inside were formatted with the token in them.
func redactError(err error, rawURL string) error {
	toks := tokens(rawURL)
	if len(toks) == 0 {
		return err
	}
	msg := err.Error()
	for _, tok := range toks {
		msg = strings.ReplaceAll(msg, tok, redacted)
	}
	return &redactedError{msg: msg, err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string        { return e.msg }
func (e *redactedError) Is(target error) bool { return errors.Is(e.err, target) }
func (e *redactedError) As(target any) bool   { return errors.As(e.err, target) }
