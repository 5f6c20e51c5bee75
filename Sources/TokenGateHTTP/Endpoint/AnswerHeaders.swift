import HTTPTypes
import NIOHTTP1

/// Where a JSON answer's header fields are written, so that both doors write them with one piece of code: into
/// HTTPTypes' `HTTPFields` for the router's answers, into NIO's `HTTPHeaders` for the fast path's, which then
/// leave without an HTTPTypes → HTTP/1 conversion.
protocol AnswerHeaders {
    /// Empty, with room for `capacity` fields.
    init(reservingCapacity capacity: Int)
    /// A field made once (its value checked then).
    mutating func append(_ field: HTTPField)
    /// A field whose value is this answer's own.
    mutating func append(_ name: HTTPField.Name, _ value: String)
}

extension HTTPFields: AnswerHeaders {
    init(reservingCapacity capacity: Int) {
        self.init()
        reserveCapacity(capacity)
    }

    mutating func append(_ name: HTTPField.Name, _ value: String) {
        append(HTTPField(name: name, value: value))
    }
}

/// The names as HTTPTypes spells them, so both doors put the same bytes on the wire. Values are written as given:
/// every value here is the gateway's own (a number, a fixed text, a policy made from the configuration).
extension HTTPHeaders: AnswerHeaders {
    init(reservingCapacity capacity: Int) {
        self.init()
        reserveCapacity(capacity)
    }

    mutating func append(_ field: HTTPField) {
        add(name: field.name.rawName, value: field.value)
    }

    mutating func append(_ name: HTTPField.Name, _ value: String) {
        add(name: name.rawName, value: value)
    }
}
