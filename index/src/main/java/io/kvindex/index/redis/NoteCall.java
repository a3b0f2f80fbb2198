package io.kvindex.index.redis;

import java.util.List;

/**
 * note.lua's call: sets each field of a note hash to Redis's clock.
 *
 * @param hash the note hash (a group's meta, or the routers' notes)
 * @param limit the fields the hash may hold before it is emptied (0: no limit)
 */
record NoteCall(byte[] hash, int limit, List<byte[]> fields) implements ScriptCall.Source {
  @Override
  public ScriptCall on(KeySchema keys) {
    return ScriptCall.of(Scripts.NOTE)
        .key("hash", hash)
        .arg("limit", limit)
        .rest("fields", fields)
        .build();
  }
}
