package main

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// RegexCase is one question about an RE2 pattern: is it valid, does it match the input whole, and what
// does replacing every match with the substitution give (RE2's \0-\9 and \\ syntax, as Envoy's
// regex_rewrite reads it).
type RegexCase struct {
	Pattern      string  `json:"pattern"`
	Input        string  `json:"input"`
	Substitution *string `json:"substitution,omitempty"`
}

// RegexAnswer is Go's regexp (RE2's syntax and semantics) on one case. Replaced is absent when the
// pattern or the substitution is refused.
type RegexAnswer struct {
	Error    string  `json:"error,omitempty"`
	Match    bool    `json:"match"`
	Replaced *string `json:"replaced,omitempty"`
}

// runRegex answers a JSON list of RegexCase with a JSON list of RegexAnswer.
func runRegex(in io.Reader, out io.Writer) error {
	var cases []RegexCase
	if err := json.NewDecoder(in).Decode(&cases); err != nil {
		return fmt.Errorf("reading the regex cases: %w", err)
	}
	answers := make([]RegexAnswer, len(cases))
	for i, c := range cases {
		answers[i] = answerRegex(c)
	}
	return json.NewEncoder(out).Encode(answers)
}

func answerRegex(c RegexCase) RegexAnswer {
	re, err := regexp.Compile(c.Pattern)
	if err != nil {
		return RegexAnswer{Error: err.Error()}
	}
	whole := regexp.MustCompile(`^(?:` + c.Pattern + `)$`)
	answer := RegexAnswer{Match: whole.MatchString(c.Input)}
	if c.Substitution != nil {
		if template, ok := goTemplate(*c.Substitution, re.NumSubexp()); ok {
			replaced := re.ReplaceAllString(c.Input, template)
			answer.Replaced = &replaced
		}
	}
	return answer
}

// goTemplate turns an RE2 rewrite string into Go's template syntax; false when RE2 refuses it (a
// backslash before anything but a digit or a backslash, or a group the pattern does not have).
func goTemplate(s string, groups int) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '$':
			b.WriteString("$$")
		case s[i] != '\\':
			b.WriteByte(s[i])
		case i+1 < len(s) && s[i+1] == '\\':
			b.WriteByte('\\')
			i++
		case i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			if int(s[i+1]-'0') > groups {
				return "", false
			}
			b.WriteString("${" + string(s[i+1]) + "}")
			i++
		default:
			return "", false
		}
	}
	return b.String(), true
}
