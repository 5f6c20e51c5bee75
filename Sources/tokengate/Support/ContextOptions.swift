import ArgumentParser
import Foundation
import TokenGateCore

/// `--type` and the context options that name a trip, vehicle, task or shipment.
struct ContextOptions: ParsableArguments {
    @Option(
        name: .long,
        help:
            "Token type: consumer, driver, delivery-driver, trusted-delivery-driver, delivery-consumer, batch-tasks, fleet-reader, delivery-fleet-reader or server."
    )
    var type: String?

    @Option(name: .customLong("trip-id"), help: "The trip (consumer tokens).")
    var tripID: String?

    @Option(name: .customLong("vehicle-id"), help: "The vehicle (driver tokens).")
    var vehicleID: String?

    @Option(name: .customLong("delivery-vehicle-id"), help: "The delivery vehicle (delivery-driver tokens).")
    var deliveryVehicleID: String?

    @Option(name: .customLong("tracking-id"), help: "The shipment tracking ID (delivery-consumer tokens).")
    var trackingID: String?

    @Option(name: .customLong("task-id"), help: "The task ID (delivery-consumer tokens; trusted-delivery-driver: an ID or '*').")
    var taskID: String?

    @Option(name: .customLong("task-ids"), help: "Comma-separated task IDs (batch-tasks tokens).")
    var taskIDs: String?

    // Core messages name request parameters; on the command line they are options.
    private static let optionNames = [
        ("deliveryVehicleId", "--delivery-vehicle-id"), ("tripId", "--trip-id"), ("vehicleId", "--vehicle-id"),
        ("trackingId", "--tracking-id"), ("taskIds", "--task-ids"), ("taskId", "--task-id"),
    ]

    var parameters: [String: String] {
        var parameters: [String: String] = [:]
        parameters["tripId"] = tripID
        parameters["vehicleId"] = vehicleID
        parameters["deliveryVehicleId"] = deliveryVehicleID
        parameters["trackingId"] = trackingID
        parameters["taskId"] = taskID
        parameters["taskIds"] = taskIDs
        return parameters
    }

    /// Whether any type or context was given.
    var isEmpty: Bool { type == nil && parameters.isEmpty }

    /// The context these options name; the type is `--type` or implied by the one ID option given.
    func context() throws(CLIFailure) -> TokenContext {
        let type: TokenType
        if let name = self.type {
            guard let parsed = TokenType(rawValue: name) else {
                throw CLIFailure(.usage, "unknown --type '\(name)'; expected one of: \(TokenType.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            type = parsed
        } else {
            switch parameters.keys.sorted() {
            case ["tripId"]: type = .consumer
            case ["vehicleId"]: type = .driver
            case ["deliveryVehicleId"]: type = .deliveryDriver
            case ["trackingId"], ["taskId"]: type = .deliveryConsumer
            case ["deliveryVehicleId", "taskId"]: type = .trustedDeliveryDriver
            case ["taskIds"]: type = .batchTasks
            default:
                throw CLIFailure(
                    .usage,
                    "give --type, or the ID options of one type (--trip-id, --vehicle-id, --delivery-vehicle-id [--task-id], --tracking-id, --task-id, --task-ids)"
                )
            }
        }
        do {
            return try TokenContext.parse(type: type, parameters: parameters)
        } catch {
            var message = error.description
            for (parameter, option) in Self.optionNames { message = message.replacingOccurrences(of: parameter, with: option) }
            throw CLIFailure(.usage, message)
        }
    }
}
