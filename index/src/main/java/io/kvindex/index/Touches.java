package io.kvindex.index;

import io.kvindex.common.Check;
import java.util.List;

/**
 * The touches of a pod read after a cursor ({@link PrefixIndex#touches}), oldest first, and the
 * cursor to read from next. Immutable.
 *
 * @param touches the touches, oldest first
 * @param cursor where the next read starts: after the last touch returned (the same cursor when
 *     none was)
 * @param more whether touches after {@code cursor} were left for the next read (a read returns at
 *     most its count and about {@link PrefixIndex#MAX_TOUCH_READ_BYTES} of block keys)
 */
public record Touches(List<Touch> touches, String cursor, boolean more) {
  public Touches {
    touches = List.copyOf(Check.notNull(touches, "touches"));
    Check.notBlank(cursor, "cursor");
  }
}
