package llm

import (
	"errors"
	"fmt"
	"time"
)

// ErrorKind classifies a provider failure so callers can decide what to do
// (wait and retry, fix the key, shorten the prompt) without parsing text.
type ErrorKind int

const (
	KindUnknown ErrorKind = iota
	KindRateLimit
	KindAuth
	KindContextLength
	KindTimeout
	KindServer
	KindEmptyReply
	KindBadRequest
)

var kindNames = [...]string{"unknown", "rate limit", "auth", "context length", "timeout", "server", "empty reply", "bad request"}

func (k ErrorKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Sentinels for errors.Is: errors.Is(err, llm.ErrRateLimit) holds for any
// *Error of that kind.
var (
	ErrRateLimit     = &Error{Kind: KindRateLimit}
	ErrAuth          = &Error{Kind: KindAuth}
	ErrContextLength = &Error{Kind: KindContextLength}
	ErrTimeout       = &Error{Kind: KindTimeout}
	ErrServer        = &Error{Kind: KindServer}
	ErrEmptyReply    = &Error{Kind: KindEmptyReply}
	ErrBadRequest    = &Error{Kind: KindBadRequest}
)

// Error is a provider failure.
type Error struct {
	Kind     ErrorKind
	Provider string
	// Status is the HTTP status, when there was one.
	Status  int
	Message string
	// RetryAfter is the provider's hint for rate limits, when it gave one.
	RetryAfter time.Duration
	Err        error
}

func (e *Error) Error() string {
	msg := e.Message
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	s := e.Kind.String()
	if e.Provider != "" {
		s = e.Provider + ": " + s
	}
	if e.Status != 0 {
		s += fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	if msg != "" {
		s += ": " + msg
	}
	if hint := e.hint(); hint != "" {
		s += " (" + hint + ")"
	}
	return s
}

func (e *Error) hint() string {
	switch e.Kind {
	case KindAuth:
		return "check the API key and that it may use this model"
	case KindContextLength:
		return "the prompt is too long for this model: lower max steps or use a model with a larger context"
	case KindRateLimit:
		return "wait and retry, or lower the request rate"
	}
	return ""
}

func (e *Error) Unwrap() error { return e.Err }

// Is matches sentinels by kind.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Err == nil && t.Status == 0 && t.Provider == "" && t.Kind == e.Kind
}

// Retryable reports whether trying the same request again may succeed.
func Retryable(err error) bool {
	return errors.Is(err, ErrRateLimit) || errors.Is(err, ErrTimeout) || errors.Is(err, ErrServer)
}

// KindForStatus maps an HTTP status to an error kind.
func KindForStatus(status int) ErrorKind {
	switch {
	case status == 401 || status == 403:
		return KindAuth
	case status == 429:
		return KindRateLimit
	case status == 408 || status == 504:
		return KindTimeout
	case status >= 500:
		return KindServer
	case status == 400 || status == 404 || status == 422:
		return KindBadRequest
	}
	return KindUnknown
}
