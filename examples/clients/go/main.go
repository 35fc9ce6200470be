// A Go orchestrator's client of `faultline serve`, standard library only: classify one
// failure, then feed a recovery session its events and read the verdict back.
//
//	FAULTLINE_URL=http://127.0.0.1:8462 go run ./examples/clients/go
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
)

func post(base, path string, body any, answer any) error {
	payload, err := json.Marshal(body)
	if err != nil {
		return err
	}
	response, err := http.Post(base+path, "application/json", bytes.NewReader(payload))
	if err != nil {
		return err
	}
	defer response.Body.Close()
	if response.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: %s", path, response.Status)
	}
	return json.NewDecoder(response.Body).Decode(answer)
}

func main() {
	base := os.Getenv("FAULTLINE_URL")
	if base == "" {
		base = "http://127.0.0.1:8462"
	}
	var classification struct {
		Code          string `json:"code"`
		AutoRetryable bool   `json:"auto_retryable"`
		Bundle        string `json:"bundle"`
	}
	evidence := map[string]any{"provider_id": "claude-acp", "http_status": 529, "stderr": "API Error: 529 overloaded_error"}
	if err := post(base, "/v1/classify", evidence, &classification); err != nil {
		fmt.Fprintln(os.Stderr, "classify:", err)
		os.Exit(1)
	}
	fmt.Printf("classified %s (auto_retryable %v) with bundle %.12s\n", classification.Code, classification.AutoRetryable, classification.Bundle)

	events := []map[string]any{
		{"provider_id": "claude-acp", "event": "prompt_began", "execution_id": "exec-1", "generation": 1},
		{"event": "prompt_failed", "execution_id": "exec-1", "generation": 1, "occurred_at": "2026-10-01T08:00:00Z",
			"error": map[string]any{"code": -32603, "message": "Internal error: API Error: 529 Overloaded"}},
	}
	var answer struct {
		Sequence int              `json:"sequence"`
		Effects  []map[string]any `json:"effects"`
	}
	for _, event := range events {
		if err := post(base, "/v1/sessions/go-client/events", event, &answer); err != nil {
			fmt.Fprintln(os.Stderr, "event:", err)
			os.Exit(1)
		}
	}
	outcome, _ := answer.Effects[0]["outcome"].(string)
	disposition, _ := answer.Effects[0]["disposition"].(string)
	fmt.Printf("event %d: %s, recovery %s\n", answer.Sequence, outcome, disposition)
	if classification.Code == "" || outcome != "failed" || disposition == "" {
		os.Exit(1)
	}
}
