package engine

import (
	"fmt"
	"slices"

	"rigscope/engine/loader"
	"rigscope/engine/tokenizer"
)

// stopIDs is the one place that decides which token ids end a generation:
// the tokenizer's EOS, the ids generation_config.json lists as eos_token_id
// (loader.MetaEOSIDs), and the end-of-turn tokens of the model's chat
// template (its own Jinja text, else the built-in format it was detected
// as) and of format, the built-in chat format the run's prompt was
// rendered with (RunConfig.Template; "" for none). An id outside the
// vocabulary is an error naming it.
func stopIDs(tok tokenizer.Tokenizer, meta map[string]string, format string) ([]int32, error) {
	ids := []int32{}
	if eos := tok.EOS(); eos >= 0 {
		ids = append(ids, eos)
	}
	declared, err := loader.ParseEOSIDs(meta[loader.MetaEOSIDs])
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	for _, id := range declared {
		if int(id) >= tok.VocabSize() {
			return nil, fmt.Errorf("engine: %s: generation_config.json's eos_token_id %d is outside the vocabulary of %d tokens (fix the id or remove the file)", meta["path"], id, tok.VocabSize())
		}
	}
	ids = append(ids, declared...)
	turnEnds := tokenizer.JinjaTemplate{Source: meta["chat_template"]}.TurnEndPieces()
	for _, name := range []string{tokenizer.DetectTemplate(meta["chat_template"], tok), format} {
		if p := tokenizer.BuiltinTurnEnd(name); p != "" {
			turnEnds = append(turnEnds, p)
		}
	}
	ids = append(ids, tokenizer.PieceIDs(tok, turnEnds)...)
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// piece is the vocabulary entry of id, "" for -1 (no such token).
func piece(tok tokenizer.Tokenizer, id int32) string {
	if id < 0 {
		return ""
	}
	return tok.Piece(id)
}
