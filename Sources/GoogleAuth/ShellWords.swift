/// An executable's `command` split into words as google-auth splits it (Python's `shlex.split`, POSIX rules) and
/// no shell ever sees it: words are separated by white space; `'…'` keeps everything; `"…"` keeps everything but
/// `\"` and `\\`, which become `"` and `\`; outside quotes `\` takes the next character as it is; `#` is no comment.
enum ShellWords {
    /// Why a command cannot be split.
    enum Problem: Error, Equatable {
        case unclosedQuote
        case trailingBackslash
    }

    static func split(_ command: String) throws(Problem) -> [String] {
        var words: [String] = []
        var word = ""
        // A word has begun even when it is still empty: `''` is a word.
        var inWord = false
        var iterator = command.makeIterator()
        while let character = iterator.next() {
            switch character {
            case _ where character.isWhitespace:
                if inWord { words.append(word) }
                word = ""
                inWord = false
            case "'":
                inWord = true
                while true {
                    guard let next = iterator.next() else { throw .unclosedQuote }
                    if next == "'" { break }
                    word.append(next)
                }
            case "\"":
                inWord = true
                while true {
                    guard let next = iterator.next() else { throw .unclosedQuote }
                    if next == "\"" { break }
                    if next == "\\" {
                        guard let escaped = iterator.next() else { throw .unclosedQuote }
                        if escaped != "\"" && escaped != "\\" { word.append("\\") }
                        word.append(escaped)
                    } else {
                        word.append(next)
                    }
                }
            case "\\":
                guard let escaped = iterator.next() else { throw .trailingBackslash }
                inWord = true
                word.append(escaped)
            default:
                inWord = true
                word.append(character)
            }
        }
        if inWord { words.append(word) }
        return words
    }
}
