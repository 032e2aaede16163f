/* glimmer_text.h: text in and out of Muse Glimmer: the tokenizer (a Hugging Face tokenizer.json,
 * byte-level BPE), a streaming detokenizer, the Muse chat format renderer and the parser of what
 * the model writes back (reasoning, answer, tool calls).
 *
 * Everything here is host-side and independent of the engine; a tokenizer is immutable after
 * loading and may be shared by threads. Functions that can fail return a glim_status and fill
 * `err` (when not NULL); nothing here exits or prints. Strings are UTF-8 with explicit lengths;
 * text handed to the tokenizer may contain invalid UTF-8 (it round-trips byte for byte). */
#ifndef GLIMMER_TEXT_H
#define GLIMMER_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "glimmer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
 * Token vectors */

typedef struct glim_tokens {
    int32_t *ids;
    size_t n, cap;
} glim_tokens;

/* Appends one id (grows the vector). */
glim_status glim_tokens_push(glim_tokens *t, int32_t id, glim_error *err);
void glim_tokens_free(glim_tokens *t); /* frees ids and zeroes the struct */

/* ---------------------------------------------------------------------------------------------
 * Tokenizer */

typedef struct glim_tokenizer glim_tokenizer;

/* Loads `path`: a tokenizer.json file, or a directory holding one. */
glim_status glim_tokenizer_load(const char *path, glim_tokenizer **out, glim_error *err);
/* Same, from the JSON text in memory. */
glim_status glim_tokenizer_load_json(const char *json, size_t len, glim_tokenizer **out,
                                     glim_error *err);
void glim_tokenizer_free(glim_tokenizer *tok);

/* One more than the largest id (added tokens included): 202048 for Muse Glimmer. */
int glim_tokenizer_n_vocab(const glim_tokenizer *tok);
/* The id the post-processor puts first (BOS), or -1 when it adds none. */
int glim_tokenizer_bos_id(const glim_tokenizer *tok);
/* The id of a token given by its exact text (vocab entry in byte-level form, or an added token
 * such as "<|eot|>"), or -1. */
int32_t glim_tokenizer_find(const glim_tokenizer *tok, const char *text);
/* Whether id is an added token marked special. */
int glim_tokenizer_is_special(const glim_tokenizer *tok, int32_t id);

enum {
    GLIM_TOK_ADD_SPECIAL = 1u << 0,   /* run the post-processor (Muse: prepend BOS) */
    GLIM_TOK_PARSE_SPECIAL = 1u << 1, /* special tokens written in the text become their ids;
                                         without it they are ordinary text. Non-special added
                                         tokens are always recognised (as Hugging Face does). */
};

/* Appends the ids of text[0..len) to `out`. */
glim_status glim_tokenize(const glim_tokenizer *tok, const char *text, size_t len, unsigned flags,
                          glim_tokens *out, glim_error *err);

/* The bytes a token decodes to (the ByteLevel decoder applied to it; added tokens: their text).
 * NULL with *len = 0 for an id that is not in the vocabulary. */
const char *glim_token_bytes(const glim_tokenizer *tok, int32_t id, size_t *len);

enum {
    GLIM_DETOK_SKIP_SPECIAL = 1u << 0, /* leave special tokens out of the text */
};

/* Decodes ids into a malloc'd buffer (*out, *len; NUL-terminated for convenience). The bytes
 * are exactly those of the tokens, so decode(encode(x)) == x even for invalid UTF-8. An id
 * outside the vocabulary is a GLIM_E_ARG error. */
glim_status glim_detokenize(const glim_tokenizer *tok, const int32_t *ids, size_t n,
                            unsigned flags, char **out, size_t *len, glim_error *err);

/* ---------------------------------------------------------------------------------------------
 * Streaming decoder: token by token, only ever hands out whole UTF-8 characters. Bytes that can
 * never form a valid character come out as U+FFFD (as a lossy UTF-8 conversion does). */

typedef struct glim_stream_decoder glim_stream_decoder;

glim_stream_decoder *glim_stream_decoder_new(const glim_tokenizer *tok, int show_special);
void glim_stream_decoder_free(glim_stream_decoder *d);
/* Feeds a token; returns the text that became complete (valid until the next call) and its
 * length in *len (0 when nothing is complete yet). Unknown ids produce nothing. */
const char *glim_stream_decoder_push(glim_stream_decoder *d, int32_t id, size_t *len);
/* Ends the stream: returns what is still held back (an incomplete character -> U+FFFD). */
const char *glim_stream_decoder_flush(glim_stream_decoder *d, size_t *len);

/* ---------------------------------------------------------------------------------------------
 * Muse chat format (MODEL.md section 4) */

typedef enum glim_chat_role {
    GLIM_ROLE_SYSTEM = 0,
    GLIM_ROLE_USER,
    GLIM_ROLE_ASSISTANT,
    GLIM_ROLE_TOOL,
} glim_chat_role;

typedef struct glim_tool_call {
    const char *name;      /* e.g. "functions.get_weather" */
    const char *arguments; /* a JSON object; each member becomes an <atem:parameter> */
} glim_tool_call;

/* An assistant message renders as: its reasoning (to=self ... <|eom|>), then its answer
 * (to=user ... <|eot|>, or <|eom|> when tool calls follow), then each tool call as its own
 * message (<|eom|> between parallel calls, <|eot|> after the last). */
typedef struct glim_chat_message {
    glim_chat_role role;
    const char *content;   /* system/user text; assistant answer (NULL or "" = none);
                              tool: the result, written verbatim inside <tool_output> */
    const char *reasoning; /* assistant: its reasoning (to=self), or NULL */
    const glim_tool_call *tool_calls; /* assistant: calls it made (in order), or NULL */
    int n_tool_calls;
    const char *name;      /* tool: the name of the tool that produced the result */
} glim_chat_message;

typedef struct glim_chat_tool {
    const char *name;        /* "namespace.function" or "function" */
    const char *description; /* may be NULL */
    const char *parameters;  /* JSON schema object text, or NULL for {} */
} glim_chat_tool;

typedef struct glim_chat_options {
    const char *reasoning_strength; /* "low", "medium", "high" (NULL = high) or "xhigh" */
    const char *current_date;       /* "DD-MM-YYYY" for the default system message; NULL = today */
    const char *knowledge_cutoff;   /* NULL = "04-01-2026" */
    const glim_chat_tool *tools;
    int n_tools;
    int add_generation_prompt;      /* end with "<|start|>assistant" */
    int first_message;              /* render only messages[first_message..]: no BOS and no
                                       system block (for continuing a conversation whose earlier
                                       part is already in the KV cache). 0 = whole conversation */
} glim_chat_options;

/* Renders the conversation as text (malloc'd, NUL-terminated). A system message, if any, must be
 * messages[0]. */
glim_status glim_chat_render(const glim_chat_message *messages, int n,
                             const glim_chat_options *opt, char **out, size_t *len,
                             glim_error *err);

/* Renders and tokenizes: the template's special tokens become their ids, BOS is written by the
 * template itself (no second one), and the text of the messages stays text even if it spells
 * a special token. Appends to `out`. */
glim_status glim_chat_tokenize(const glim_tokenizer *tok, const glim_chat_message *messages,
                               int n, const glim_chat_options *opt, glim_tokens *out,
                               glim_error *err);

/* ---------------------------------------------------------------------------------------------
 * Parsing what the model generates after "<|start|>assistant" */

typedef enum glim_chat_channel {
    GLIM_CHANNEL_HEADER = 0, /* between <|start|> and <|message|> ("assistant to=...") */
    GLIM_CHANNEL_REASONING,  /* to=self */
    GLIM_CHANNEL_ANSWER,     /* to=user */
    GLIM_CHANNEL_TOOL,       /* to=<tool>: the <atem:function_calls> block */
    GLIM_CHANNEL_OTHER,      /* a recipient we do not know */
} glim_chat_channel;

typedef struct glim_parsed_call {
    char *name;      /* from <atem:invoke name="...">, else the recipient */
    char *arguments; /* a compact JSON object: each <atem:parameter> value as written (a JSON
                        string), or as JSON when it is exactly a number, true/false/null, an
                        object or an array (and the tool's schema, when given, allows it) */
} glim_parsed_call;

typedef struct glim_chat_result {
    char *reasoning;   /* all to=self text, messages joined with "\n" (invalid UTF-8 -> U+FFFD) */
    char *answer;      /* all to=user text, messages concatenated */
    glim_parsed_call *calls;
    int n_calls;
    int stopped;       /* a stop id (200001 <|end_of_text|> or 200008 <|eot|>) was seen */
    int malformed;     /* the output did not follow the format; parsed as well as possible */
    char problem[256]; /* the first thing that was wrong, when malformed */
} glim_chat_result;

typedef struct glim_chat_parser glim_chat_parser;

/* `tools` (may be NULL) gives parameter types: a parameter declared "string" stays a JSON string
 * even when it looks like a number. */
glim_chat_parser *glim_chat_parser_new(const glim_tokenizer *tok, const glim_chat_tool *tools,
                                       int n_tools);
void glim_chat_parser_free(glim_chat_parser *p);

/* What one pushed token added, for streaming display. */
typedef struct glim_chat_delta {
    glim_chat_channel channel; /* the channel the text belongs to */
    const char *text;          /* complete UTF-8 text of that channel (valid until next push) */
    size_t len;
    int new_message;           /* this token started a new message (its header is complete) */
    const char *recipient;     /* recipient of the current message ("self", "user", tool name) */
} glim_chat_delta;

/* Feeds one generated token. Returns 1 when generation must stop (a stop id), else 0. <|eom|>
 * never stops: the model continues with another message. */
int glim_chat_parser_push(glim_chat_parser *p, int32_t id, glim_chat_delta *delta);
/* Parses everything pushed so far (tool calls included) into `out`; free it with
 * glim_chat_result_free. Never fails on malformed output: it sets out->malformed instead. */
glim_status glim_chat_parser_finish(glim_chat_parser *p, glim_chat_result *out, glim_error *err);
void glim_chat_result_free(glim_chat_result *r);

/* Parses a whole generation at once (ids as generated after "<|start|>assistant"). */
glim_status glim_chat_parse(const glim_tokenizer *tok, const glim_chat_tool *tools, int n_tools,
                            const int32_t *ids, size_t n, glim_chat_result *out, glim_error *err);

/* Parses one <atem:function_calls> block (text) into calls; appends to r->calls and sets
 * r->malformed on trouble. Exposed for tests and for callers that parse text. */
void glim_chat_parse_function_calls(const char *text, size_t len, const char *recipient,
                                    const glim_chat_tool *tools, int n_tools,
                                    glim_chat_result *r);

#ifdef __cplusplus
}
#endif
#endif
