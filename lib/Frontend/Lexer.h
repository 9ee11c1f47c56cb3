//===- Lexer.h - lexer of the strata model DSL ------------------*- C++ -*-===//
//
// Part of strata, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// A hand-written lexer for the model DSL (docs/DSL.md), shaped like the MLIR
// Toy tutorial's: one token of look-ahead, every token carrying its file, line
// and column. Unlike Toy, the lexer never prints: a malformed token becomes a
// `tok_error` token whose message the parser reports as an MLIR diagnostic.
// String literals are returned raw (escapes resolved, `{...}` interpolation
// holes left in place); the parser splits them into parts.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_LIB_FRONTEND_LEXER_H
#define STRATA_LIB_FRONTEND_LEXER_H

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSwitch.h"

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace mlir::strata::dsl {

/// A position in a DSL source file. `file` is shared by every token of one
/// buffer; it is the buffer identifier the SourceMgr knows the file by.
struct Location {
  std::shared_ptr<std::string> file;
  int line = 0; ///< 1-based.
  int col = 0;  ///< 1-based.
};

/// Token kinds. Single-character punctuation is returned as its character.
enum Token : int {
  tok_eof = -1,
  tok_error = -2,
  tok_ident = -3,
  tok_int = -4,
  tok_float = -5,
  tok_string = -6,
  // Keywords.
  tok_import = -10,
  tok_def = -11,
  tok_entry = -12,
  tok_let = -13,
  tok_for = -14,
  tok_in = -15,
  tok_if = -16,
  tok_else = -17,
  tok_return = -18,
  tok_scope = -19,
  tok_assert = -20,
  tok_true = -21,
  tok_false = -22,
  tok_none = -23,
  // Multi-character operators.
  tok_dotdot = -30, // ..
  tok_eq = -31,     // ==
  tok_ne = -32,     // !=
  tok_le = -33,     // <=
  tok_ge = -34,     // >=
  tok_and = -35,    // &&
  tok_or = -36,     // ||
};

/// Stand-ins for `\{` and `\}` in decoded string literals.
constexpr char kEscapedOpenBrace = '\x01';
constexpr char kEscapedCloseBrace = '\x02';

/// Lexes one in-memory buffer. The buffer must outlive the lexer.
class Lexer {
public:
  /// `startLine`/`startCol` let the parser re-lex an interpolation hole of a
  /// string literal with positions that point into the original file.
  Lexer(llvm::StringRef buffer, std::shared_ptr<std::string> file,
        int startLine = 1, int startCol = 1)
      : buffer(buffer), file(std::move(file)), curLine(startLine),
        curCol(startCol) {}

  Token getCurToken() const { return curTok; }
  /// Moves to the next token and returns it.
  Token getNextToken() { return curTok = getTok(); }
  /// Asserts the current token is `tok` and moves on.
  void consume(Token tok) {
    (void)tok;
    getNextToken();
  }

  llvm::StringRef getId() const { return identifierStr; }
  int64_t getIntValue() const { return intValue; }
  double getFloatValue() const { return floatValue; }
  /// The decoded contents of a string literal (escapes resolved).
  llvm::StringRef getStringValue() const { return stringValue; }
  /// The message of the last `tok_error`.
  const std::string &getErrorMessage() const { return errorMessage; }
  /// Line and column (1-based) of each decoded string character.
  const std::vector<std::pair<int, int>> &getStringPositions() const {
    return stringPositions;
  }
  /// Location of the current token's first character.
  Location getLastLocation() const { return lastLocation; }
  int getLine() const { return curLine; }
  int getCol() const { return curCol; }

private:
  /// Returns the next character, updating line and column; -1 at the end.
  int getNextChar() {
    if (pos >= buffer.size())
      return -1;
    char c = buffer[pos++];
    if (c == '\n') {
      ++curLine;
      curCol = 1;
    } else {
      ++curCol;
    }
    return static_cast<unsigned char>(c);
  }
  int peekChar(size_t ahead = 0) const {
    return pos + ahead < buffer.size()
               ? static_cast<unsigned char>(buffer[pos + ahead])
               : -1;
  }

  Token error(std::string message) {
    errorMessage = std::move(message);
    return tok_error;
  }

  Token getTok() {
    // Skip whitespace and `//` comments.
    while (true) {
      int c = peekChar();
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
        getNextChar();
        continue;
      }
      if (c == '/' && peekChar(1) == '/') {
        while (peekChar() != -1 && peekChar() != '\n')
          getNextChar();
        continue;
      }
      break;
    }
    lastLocation = {file, curLine, curCol};
    int c = getNextChar();
    if (c == -1)
      return tok_eof;

    if (isalpha(c) || c == '_') {
      identifierStr = static_cast<char>(c);
      while (isalnum(peekChar()) || peekChar() == '_')
        identifierStr += static_cast<char>(getNextChar());
      return llvm::StringSwitch<Token>(identifierStr)
          .Case("import", tok_import)
          .Case("def", tok_def)
          .Case("entry", tok_entry)
          .Case("let", tok_let)
          .Case("for", tok_for)
          .Case("in", tok_in)
          .Case("if", tok_if)
          .Case("else", tok_else)
          .Case("return", tok_return)
          .Case("scope", tok_scope)
          .Case("assert", tok_assert)
          .Case("true", tok_true)
          .Case("false", tok_false)
          .Case("none", tok_none)
          .Default(tok_ident);
    }

    if (isdigit(c))
      return lexNumber(c);

    if (c == '"')
      return lexString();

    auto two = [&](char next, Token) -> bool {
      if (peekChar() != next)
        return false;
      getNextChar();
      return true;
    };
    switch (c) {
    case '.':
      if (two('.', tok_dotdot))
        return tok_dotdot;
      return Token('.');
    case '=':
      if (two('=', tok_eq))
        return tok_eq;
      return Token('=');
    case '!':
      if (two('=', tok_ne))
        return tok_ne;
      return Token('!');
    case '<':
      if (two('=', tok_le))
        return tok_le;
      return Token('<');
    case '>':
      if (two('=', tok_ge))
        return tok_ge;
      return Token('>');
    case '&':
      if (two('&', tok_and))
        return tok_and;
      return error("unexpected character '&'; did you mean '&&'");
    case '|':
      if (two('|', tok_or))
        return tok_or;
      return error("unexpected character '|'; did you mean '||'");
    case '(': case ')': case '{': case '}': case '[': case ']': case ',':
    case ';': case ':': case '+': case '-': case '*': case '/': case '%':
    case '?':
      return Token(c);
    default:
      break;
    }
    if (c >= 0x20 && c < 0x7f)
      return error(std::string("unexpected character '") +
                   static_cast<char>(c) + "'");
    char hex[8];
    snprintf(hex, sizeof(hex), "0x%02x", c);
    return error(std::string("unexpected byte ") + hex);
  }

  /// number ::= digit+ ('.' digit+)? ([eE] [+-]? digit+)?
  Token lexNumber(int first) {
    std::string text(1, static_cast<char>(first));
    bool isFloat = false;
    while (isdigit(peekChar()))
      text += static_cast<char>(getNextChar());
    // A '.' followed by a digit is a fraction; `0 .. n` stays a range.
    if (peekChar() == '.' && isdigit(peekChar(1))) {
      isFloat = true;
      text += static_cast<char>(getNextChar());
      while (isdigit(peekChar()))
        text += static_cast<char>(getNextChar());
    }
    if (peekChar() == 'e' || peekChar() == 'E') {
      int sign = peekChar(1);
      size_t digitAt = (sign == '+' || sign == '-') ? 2 : 1;
      if (!isdigit(peekChar(digitAt)))
        return error("malformed exponent in number '" + text + "'");
      isFloat = true;
      for (size_t i = 0; i < digitAt; ++i)
        text += static_cast<char>(getNextChar());
      while (isdigit(peekChar()))
        text += static_cast<char>(getNextChar());
    }
    if (isalpha(peekChar()) || peekChar() == '_')
      return error("invalid character '" +
                   std::string(1, static_cast<char>(peekChar())) +
                   "' after number '" + text + "'");
    if (isFloat) {
      floatValue = strtod(text.c_str(), nullptr);
      return tok_float;
    }
    if (llvm::StringRef(text).getAsInteger(10, intValue))
      return error("integer literal '" + text + "' does not fit in 64 bits");
    return tok_int;
  }

  /// string ::= '"' (char | '\' ('"' | '\' | 'n' | 't' | '{' | '}'))* '"'
  /// Escaped braces become kEscapedOpenBrace/kEscapedCloseBrace so the parser
  /// can tell them from interpolation holes.
  Token lexString() {
    stringValue.clear();
    stringPositions.clear();
    while (true) {
      int line = curLine, col = curCol;
      int c = getNextChar();
      if (c == -1 || c == '\n')
        return error("unterminated string literal");
      if (c == '"')
        return tok_string;
      if (c == '\\') {
        int e = getNextChar();
        switch (e) {
        case '"': c = '"'; break;
        case '\\': c = '\\'; break;
        case 'n': c = '\n'; break;
        case 't': c = '\t'; break;
        case '{':
          c = kEscapedOpenBrace;
          break;
        case '}':
          c = kEscapedCloseBrace;
          break;
        default:
          return error("unknown escape sequence in string literal");
        }
      }
      stringValue += static_cast<char>(c);
      stringPositions.push_back({line, col});
    }
  }

  llvm::StringRef buffer;
  size_t pos = 0;
  std::shared_ptr<std::string> file;
  int curLine;
  int curCol;
  Location lastLocation;
  Token curTok = tok_eof;
  std::string identifierStr;
  int64_t intValue = 0;
  double floatValue = 0;
  std::string stringValue;
  std::vector<std::pair<int, int>> stringPositions;
  std::string errorMessage;
};

} // namespace mlir::strata::dsl

#endif // STRATA_LIB_FRONTEND_LEXER_H
