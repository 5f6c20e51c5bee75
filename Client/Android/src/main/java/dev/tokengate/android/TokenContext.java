package dev.tokengate.android;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * What a Fleet Engine token is for: one trip, one vehicle, one delivery vehicle (and its task), one tracked
 * shipment, one task, a batch of tasks, or a whole fleet for a read-only dashboard.
 *
 * <p>Each context maps to one gateway token type and its query
 * ({@code GET /v1/providers/{providerId}/tokens/{tokenType}?{parameter}={id}}), as the Swift client's
 * {@code TokenContext} does. Server tokens (every ID a wildcard) are deliberately absent: they never belong on a phone.
 * IDs are sent exactly as given (percent-encoded as UTF-8): a space, a {@code +} or an accented letter arrives
 * unchanged in the token's claim.
 *
 * <pre>{@code
 * String jwt = tokens.token(TokenContext.trip(authTokenContext.getTripId()));
 * }</pre>
 *
 * <p>Immutable; equal when kind and IDs are equal.
 */
public final class TokenContext {
    /** The gateway token type and the query parameter that carries the context's ID. */
    public enum Kind {
        /** A rider's trip: {@code consumer} token, {@code tripId}. */
        TRIP("consumer", "tripId"),
        /** An on-demand driver's vehicle: {@code driver} token, {@code vehicleId}. */
        VEHICLE("driver", "vehicleId"),
        /** A last-mile driver's delivery vehicle: {@code delivery-driver} token, {@code deliveryVehicleId}. */
        DELIVERY_VEHICLE("delivery-driver", "deliveryVehicleId"),
        /** A managed device's delivery vehicle and task: {@code trusted-delivery-driver}, plus {@code taskId}. */
        TRUSTED_DELIVERY_VEHICLE("trusted-delivery-driver", "deliveryVehicleId"),
        /** A shipment tracked by its recipient: {@code delivery-consumer} token, {@code trackingId}. */
        TRACKING("delivery-consumer", "trackingId"),
        /** One delivery task: {@code delivery-consumer} token, {@code taskId}. */
        TASK("delivery-consumer", "taskId"),
        /** Several tasks: {@code batch-tasks} token, {@code taskIds} (comma-separated). */
        TASKS("batch-tasks", "taskIds"),
        /** Every on-demand and delivery entity, read only: {@code fleet-reader} token, no parameter. */
        FLEET_READER("fleet-reader", ""),
        /** Every delivery entity, read only: {@code delivery-fleet-reader} token, no parameter. */
        DELIVERY_FLEET_READER("delivery-fleet-reader", "");

        private final String tokenType;
        private final String parameterName;

        Kind(String tokenType, String parameterName) {
            this.tokenType = tokenType;
            this.parameterName = parameterName;
        }

        /** The {@code {tokenType}} path segment, e.g. {@code consumer}. */
        public String tokenType() {
            return tokenType;
        }

        /** The query parameter carrying the ID, e.g. {@code tripId}; empty for the whole-fleet kinds. */
        public String parameterName() {
            return parameterName;
        }

        /** Whether the kind names no ID: its token covers a whole fleet. */
        public boolean isWholeFleet() {
            return parameterName.isEmpty();
        }
    }

    /** One query parameter, before percent-encoding. */
    public static final class Parameter {
        private final String name;
        private final String value;

        Parameter(String name, String value) {
            this.name = name;
            this.value = value;
        }

        /** Its name, e.g. {@code taskId}. */
        public String name() {
            return name;
        }

        /** Its value as given, e.g. {@code trip 42}. */
        public String value() {
            return value;
        }
    }

    private static final TokenContext FLEET_READER = new TokenContext(Kind.FLEET_READER, "", null);
    private static final TokenContext DELIVERY_FLEET_READER = new TokenContext(Kind.DELIVERY_FLEET_READER, "", null);

    private final Kind kind;
    private final String id;
    private final String task;

    private TokenContext(Kind kind, String id, String task) {
        if (id == null) throw new NullPointerException("the " + kind.parameterName() + " is null");
        this.kind = kind;
        this.id = id;
        this.task = task;
    }

    /** A consumer token for the rider of trip {@code tripId} (the Consumer SDK's {@code AuthTokenContext.getTripId()}). */
    public static TokenContext trip(String tripId) {
        return new TokenContext(Kind.TRIP, tripId, null);
    }

    /** A driver token for vehicle {@code vehicleId} (the Driver SDK's {@code AuthTokenContext.getVehicleId()}). */
    public static TokenContext vehicle(String vehicleId) {
        return new TokenContext(Kind.VEHICLE, vehicleId, null);
    }

    /** A delivery-driver token for delivery vehicle {@code deliveryVehicleId}. */
    public static TokenContext deliveryVehicle(String deliveryVehicleId) {
        return new TokenContext(Kind.DELIVERY_VEHICLE, deliveryVehicleId, null);
    }

    /**
     * A trusted delivery driver's token for delivery vehicle {@code deliveryVehicleId} and one task, or every task with
     * {@code taskId} {@code "*"} (which the gateway grants only to clients allowed every task).
     */
    public static TokenContext trustedDeliveryVehicle(String deliveryVehicleId, String taskId) {
        if (taskId == null) throw new NullPointerException("the taskId is null");
        return new TokenContext(Kind.TRUSTED_DELIVERY_VEHICLE, deliveryVehicleId, taskId);
    }

    /** A delivery-consumer token for tracking ID {@code trackingId}. */
    public static TokenContext tracking(String trackingId) {
        return new TokenContext(Kind.TRACKING, trackingId, null);
    }

    /** A delivery-consumer token for task {@code taskId}. */
    public static TokenContext task(String taskId) {
        return new TokenContext(Kind.TASK, taskId, null);
    }

    /** A batch-tasks token for {@code taskIds}, in that order (the gateway takes 1 to 25 distinct IDs). */
    public static TokenContext tasks(List<String> taskIds) {
        StringBuilder joined = new StringBuilder();
        for (int i = 0; i < taskIds.size(); i++) {
            String taskId = taskIds.get(i);
            if (taskId == null) throw new NullPointerException("a task ID is null");
            if (i > 0) joined.append(',');
            joined.append(taskId);
        }
        return new TokenContext(Kind.TASKS, joined.toString(), null);
    }

    /** A fleet-reader token for a read-only operator dashboard (granted only to clients named for it). */
    public static TokenContext fleetReader() {
        return FLEET_READER;
    }

    /** A delivery-fleet-reader token for a read-only delivery dashboard (granted only to clients named for it). */
    public static TokenContext deliveryFleetReader() {
        return DELIVERY_FLEET_READER;
    }

    /** The token type and parameter. */
    public Kind kind() {
        return kind;
    }

    /** The trip, vehicle, tracking or task ID, a batch's comma-separated task IDs, or empty for a whole fleet. */
    public String id() {
        return id;
    }

    /** Every query parameter, in order: {@code kind.parameterName()=id}, then a trusted driver's {@code taskId}. */
    public List<Parameter> parameters() {
        List<Parameter> parameters = new ArrayList<>(2);
        if (!kind.isWholeFleet()) parameters.add(new Parameter(kind.parameterName(), id));
        if (task != null) parameters.add(new Parameter("taskId", task));
        return Collections.unmodifiableList(parameters);
    }

    @Override
    public boolean equals(Object other) {
        if (this == other) return true;
        if (!(other instanceof TokenContext)) return false;
        TokenContext that = (TokenContext) other;
        return kind == that.kind && id.equals(that.id) && (task == null ? that.task == null : task.equals(that.task));
    }

    @Override
    public int hashCode() {
        return (kind.hashCode() * 31 + id.hashCode()) * 31 + (task == null ? 0 : task.hashCode());
    }

    @Override
    public String toString() {
        if (kind.isWholeFleet()) return kind.tokenType();
        StringBuilder text = new StringBuilder(kind.tokenType()).append('(');
        List<Parameter> parameters = parameters();
        for (int i = 0; i < parameters.size(); i++) {
            if (i > 0) text.append(", ");
            text.append(parameters.get(i).name()).append('=').append(parameters.get(i).value());
        }
        return text.append(')').toString();
    }
}
