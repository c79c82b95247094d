/*
 * GroupProbe: goredisson's own driver for Redisson's RedissonMultiLock,
 * RedissonRedLock and RedissonNonReentrantLock (and a plain RLock), through
 * Redisson's public API only. The interop suite compiles it at test time
 * against the class path of the Redisson probe (shared/tools/redisson-probe)
 * and runs it as
 *
 *   java -cp <tmp>:<probe class path> GroupProbe redis://127.0.0.1:<port> [version]
 *
 * The line protocol (tags, tids, "ready <client id>", errors) is
 * LineProbe's. Every lock command names a <tid> and runs on that tid's own
 * thread, so Redisson's thread-owned holds work.
 *
 * <kind> is multi (redisson.getMultiLock over the names), red (new
 * RedissonRedLock over the names), nr (getNonReentrantLock), nrfair
 * (getNonReentrantFairLock), faster (getMultiLock(group, values): the first
 * name is the group, the others its values) or plain (getLock); <names> is
 * one name, or several joined by commas, taken in the given order. A lease
 * of -1 asks for the watchdog. The client's codec is StringCodec, so that
 * a faster multilock's values are encoded as their UTF-8 bytes.
 *
 *   <kind> lock <names> <tid> [leaseMs]            -> ok
 *   <kind> trylock <names> <tid> <waitMs> <leaseMs> -> ok | false
 *   <kind> unlock <names> <tid>                    -> ok
 *   <kind> held <names> <tid>                      -> true | false   (isHeldByCurrentThread)
 *   <kind> islocked <names> <tid>                  -> true | false
 *   <kind> forceunlock <names> <tid>               -> true | false
 *   jtid <tid>                                     -> the tid's Java thread id
 *   id | version | quit
 */

import java.util.ArrayList;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;

import org.redisson.RedissonRedLock;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;

public class GroupProbe {
    public static void main(String[] args) throws Exception {
        LineProbe.serve(args, "group-probe", config -> config.setCodec(StringCodec.INSTANCE), GroupProbe::exec, GroupProbe::tidOf);
    }

    /** The tid of a command: the second word of jtid, the fourth of a lock command. */
    private static String tidOf(String[] p) {
        if (p[0].equals("jtid") && p.length > 1) {
            return p[1];
        }
        return p.length > 3 ? p[3] : null;
    }

    private static long ms(String[] p, int i, long def) {
        return p.length > i ? Long.parseLong(p[i]) : def;
    }

    /** The lock a command names, a new object for every command. */
    private static RLock lockOf(RedissonClient client, String kind, String names) {
        String[] n = names.split(",");
        switch (kind) {
            case "nrfair":
                return client.getNonReentrantFairLock(names);
            case "faster":
                return client.getMultiLock(n[0], new ArrayList<Object>(Arrays.asList(n).subList(1, n.length)));
        }
        RLock[] locks = new RLock[n.length];
        for (int i = 0; i < n.length; i++) {
            locks[i] = client.getLock(n[i]);
        }
        switch (kind) {
            case "multi":
                return client.getMultiLock(locks);
            case "red":
                return new RedissonRedLock(locks);
            case "nr":
                return client.getNonReentrantLock(names);
            case "plain":
                return client.getLock(names);
        }
        throw new IllegalArgumentException("unknown lock kind " + kind);
    }

    private static String exec(RedissonClient client, String[] p) throws Exception {
        switch (p[0]) {
            case "jtid":
                return String.valueOf(Thread.currentThread().getId());
        }
        if (p.length < 4) {
            return "err usage: <kind> <verb> <names> <tid> ...";
        }
        RLock l = lockOf(client, p[0], p[2]);
        switch (p[1]) {
            case "lock": {
                long lease = ms(p, 4, -1);
                if (lease > 0) {
                    l.lock(lease, TimeUnit.MILLISECONDS);
                } else {
                    l.lock();
                }
                return "ok";
            }
            case "trylock":
                return l.tryLock(ms(p, 4, 0), ms(p, 5, -1), TimeUnit.MILLISECONDS) ? "ok" : "false";
            case "unlock":
                l.unlock();
                return "ok";
            case "held":
                return String.valueOf(l.isHeldByCurrentThread());
            case "islocked":
                return String.valueOf(l.isLocked());
            case "forceunlock":
                return String.valueOf(l.forceUnlock());
        }
        return "err unknown command " + p[0] + " " + p[1];
    }
}
